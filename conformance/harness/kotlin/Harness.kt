// Conformance harness for the Kotlin module retrygen generates (see conformance/README.md).
// Run as: java -cp <classes>:<kotlin-stdlib> HarnessKt CASEFILE
// Compiled together with the module (RetryPolicies.kt and RetryRuntime.kt) rendered with default
// options (package retrygen.generated, object RetryPolicies). Standard library only.

import retrygen.generated.BudgetKind
import retrygen.generated.Classification
import retrygen.generated.Decision
import retrygen.generated.DecisionInput
import retrygen.generated.DecisionReason
import retrygen.generated.EventStreamScanner
import retrygen.generated.IdempotencyKeyFormat
import retrygen.generated.Outcome
import retrygen.generated.ReplayClass
import retrygen.generated.RetryBudgetCell
import retrygen.generated.RetryEvent
import retrygen.generated.RetryInputException
import retrygen.generated.RetryRuntime
import retrygen.generated.RetryPolicies
import retrygen.generated.RetryPolicy
import java.io.File
import java.nio.ByteBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.CodingErrorAction
import kotlin.system.exitProcess

/** A malformed case file. */
private class MalformedCase(message: String) : Exception(message)

public fun main(args: Array<String>) {
    if (args.size != 1) {
        System.err.println("usage: HarnessKt CASEFILE")
        exitProcess(2)
    }
    val out = StringBuilder()
    try {
        val text = strictUtf8(File(args[0]).readBytes(), "the case file")
        for ((number, line) in text.split('\n').withIndex()) {
            if (line.isEmpty()) {
                continue
            }
            val fields = line.split('\t')
            try {
                runCase(fields, out)
            } catch (e: RetryInputException) {
                // The contract's invalid-input error: its message key instead of the line's output.
                line(out, "X", if (fields.size > 1) fields[1] else "", e.key)
            } catch (e: MalformedCase) {
                throw MalformedCase("line ${number + 1}: ${e.message}")
            }
        }
    } catch (e: MalformedCase) {
        System.err.println("harness: ${e.message}")
        exitProcess(1)
    }
    System.out.write(out.toString().toByteArray(Charsets.UTF_8))
    System.out.flush()
}

private fun runCase(fields: List<String>, out: StringBuilder) {
    when (fields[0]) {
        "D" -> decideCase(fields, out)
        "D2" -> decide2Case(fields, out)
        "K" -> budgetCase(fields, out)
        "C" -> {
            expectFields(fields, 4)
            val result = RetryPolicies.classify(unhex(fields[2]), unhex(fields[3]))
            line(out, "C", fields[1], result.replayClass.wireName, hexOrAbsent(result.operation?.operationId))
        }
        "C2" -> {
            expectFields(fields, 6)
            val classifier = RetryPolicies.classifier(if (fields[2] == "-") null else wtf8(fields[2]), fields[3])
            val result = classifier.classify(wtf8(fields[4]), wtf8(fields[5]))
            line(out, "C2", fields[1], result.replayClass.wireName, hexOrAbsent(result.operation?.operationId))
        }
        "I" -> {
            expectFields(fields, 3)
            val operation = RetryPolicies.operationById(unhex(fields[2]))
            if (operation == null) {
                line(out, "I", fields[1], "-", "-")
            } else {
                line(out, "I", fields[1], hex(operation.method), hex(operation.path))
            }
        }
        "L" -> {
            expectFields(fields, 4)
            val entry = RetryPolicies.findSafeListEntry(unhex(fields[2]), unhex(fields[3]))
            line(out, "L", fields[1], if (entry == null) "0" else "1", if (entry == null) "-" else hexOrAbsent(entry.idempotencyHeader))
        }
        "H" -> {
            if (fields.size < 3 || (fields.size - 3) % 2 != 0) {
                throw MalformedCase("H line needs an operationId and name/value pairs")
            }
            val headers = (3 until fields.size step 2).map { unhex(fields[it]) to unhex(fields[it + 1]) }
            val operation = RetryPolicies.operationById(unhex(fields[2]))
            line(out, "H", fields[1], if (RetryPolicies.hasIdempotencyKey(operation, headers)) "1" else "0")
        }
        "E" -> {
            expectFields(fields, 8)
            val classifier = RetryPolicies.classifier(if (fields[2] == "-") null else wtf8(fields[2]))
            val method = wtf8(fields[3])
            val classification: Classification = classifier.classify(method, wtf8(fields[4]))
            val reason = DecisionReason.entries.firstOrNull { it.wireName == fields[7] } ?: throw MalformedCase("unknown reason ${fields[7]}")
            val event = RetryEvent.of(classification, method, integer(fields[5]), Decision(true, integer(fields[6]), reason))
            line(
                out, "E", fields[1], event.attempt.toString(), event.reason.wireName, event.delayMs.toString(), hex(event.method),
                hexOrAbsent(event.pathTemplate), hexOrAbsent(event.operationId),
            )
        }
        "O" -> {
            expectFields(fields, 4)
            line(out, "O", fields[1], if (RetryRuntime.inScope(wtf8(fields[2]), wtf8(fields[3]))) "1" else "0")
        }
        "T2" -> {
            expectFields(fields, 1)
            tables(out)
        }
        "D3" -> decide3Case(fields, out)
        "K3" -> budget3Case(fields, out)
        "HP" -> {
            if (fields.size % 2 != 0) {
                throw MalformedCase("HP line needs name/value pairs")
            }
            val headers = (2 until fields.size step 2).map { wtf8(fields[it]) to wtf8(fields[it + 1]) }
            line(out, "HP", fields[1], if (RetryRuntime.hasPrecondition(headers)) "1" else "0")
        }
        "Q" -> {
            expectFields(fields, 5)
            val type = RetryRuntime.problemTypeOf(if (fields[2] == "-") null else wtf8(fields[2]), bytes(fields[4]), flag(fields[3], "complete"))
            line(out, "Q", fields[1], hexOrAbsent(type))
        }
        "SE" -> {
            expectFields(fields, 3)
            val stream = bytes(fields[2])
            val scanner = EventStreamScanner()
            // Fed in two pieces, so that a line or a CRLF split across reads is covered too.
            val half = stream.size / 2
            scanner.feed(stream, 0, half)
            scanner.feed(stream, half, stream.size - half)
            line(out, "SE", fields[1], scanner.completeBytes.toString(), hex(scanner.lastEventId), hexOrAbsent(scanner.retry))
        }
        "F" -> {
            expectFields(fields, 4)
            val format = IdempotencyKeyFormat.parse(fields[2])
            line(out, "F", fields[1], hex(RetryRuntime.idempotencyKeyValue(format, unhex(fields[3]))))
        }
        else -> throw MalformedCase("unknown line type ${fields[0]}")
    }
}

/** A v1 decision: a v2 decision whose new policy keys are neutral, without a budget. */
private fun decideCase(f: List<String>, out: StringBuilder) {
    expectFields(f, 22)
    val policy = RetryPolicy.fromConfig(
        int(f[2]), integer(f[3]), integer(f[4]), double(f[5]), f[6], statuses(f[7]), statuses(f[8]), integer(f[9]),
        if (f[10] == "-") null else integer(f[10]), emptySet(), emptySet(), emptySet(), emptyList(), "refuse", "method_default",
        500, 5, 10, 1,
    )
    val replayClass = ReplayClass.parse(f[11])
    val outcome = if (f[13] == "status") Outcome.Status(int(f[14]), optionalHex(f[15]), optionalHex(f[16])) else Outcome.failure(f[13])
    val input = DecisionInput(replayClass, flag(f[12], "has_key"), outcome, integer(f[17]), integer(f[18]), integer(f[19]), integer(f[20]), double(f[21]))
    val decision: Decision = RetryPolicies.decide(policy, input)
    line(out, "D", f[1], if (decision.retry) "1" else "0", decision.delayMs.toString(), decision.reason.wireName)
}

/** A v2 decision: the 19 policy fields, then the input. */
private fun decide2Case(f: List<String>, out: StringBuilder) {
    expectFields(f, 35)
    val policy = policy2(f, 2)
    val replayClass = ReplayClass.parse(f[21])
    val hasKey = flag(f[22], "has_key")
    val outcome = if (f[23] == "status") {
        Outcome.Status(int(f[24]), optionalHex(f[25]), optionalHex(f[26]), optionalHex(f[27]))
    } else {
        Outcome.failure(f[23])
    }
    val tokens = if (f[33] == "-") null else integer(f[33])
    val input = DecisionInput(
        replayClass, hasKey, outcome, integer(f[28]), integer(f[29]), integer(f[30]), integer(f[31]), double(f[32]), tokens,
        flag(f[34], "timed_out"),
    )
    val decision = RetryPolicies.decide(policy, input)
    line(
        out, "D2", f[1], if (decision.retry) "1" else "0", decision.delayMs.toString(), decision.reason.wireName,
        decision.budgetTokens?.toString() ?: "-",
    )
}

/** A contract v3 decision (docs/contract.md): the 25 policy fields, then the input. */
private fun decide3Case(f: List<String>, out: StringBuilder) {
    expectFields(f, 46)
    val policy = policy3(f, 2)
    val replayClass = ReplayClass.parse(f[27])
    val hasKey = flag(f[28], "has_key")
    val hasPrecondition = flag(f[29], "has_precondition")
    val resumable = flag(f[30], "resumable")
    val hasLastEventId = flag(f[31], "has_last_event_id")
    val streamRetry = if (f[32] == "-") null else wtf8(f[32])
    val problemType = if (f[33] == "-") null else wtf8(f[33])
    val outcome = if (f[34] == "status") {
        Outcome.Status(int(f[35]), optionalHex(f[36]), optionalHex(f[37]), optionalHex(f[38]))
    } else {
        Outcome.failure(f[34])
    }
    val tokens = if (f[44] == "-") null else integer(f[44])
    val input = DecisionInput(
        replayClass, hasKey, outcome, integer(f[39]), integer(f[40]), integer(f[41]), integer(f[42]), double(f[43]), tokens,
        flag(f[45], "timed_out"), hasPrecondition, resumable, hasLastEventId, streamRetry, problemType,
    )
    val decision = RetryPolicies.decide(policy, input)
    line(
        out, "D3", f[1], if (decision.retry) "1" else "0", decision.delayMs.toString(), decision.reason.wireName,
        decision.budgetTokens?.toString() ?: "-", if (decision.throttled) "1" else "0", decision.serverDelayMs?.toString() ?: "-",
    )
}

/** A contract v3 budget sequence: the whole policy, and the throttling kind. */
private fun budget3Case(f: List<String>, out: StringBuilder) {
    expectFields(f, 28)
    val cell = RetryBudgetCell(policy3(f, 2))
    val initial = cell.tokens
    val results = ArrayList<String>()
    for (event in if (f[27].isEmpty()) emptyList() else f[27].split(',')) {
        if (event.startsWith("s")) {
            results += "s" + cell.recordSuccess(integer(event.substring(1)))
            continue
        }
        val kind = when {
            event == "r" -> BudgetKind.RETRY
            event == "t" -> BudgetKind.TIMEOUT
            event == "h" -> BudgetKind.THROTTLING
            event.startsWith("a") -> BudgetKind.parse(unhex(event.substring(1)))
            else -> throw MalformedCase("unknown budget event $event")
        }
        val result = cell.tryAcquire(kind)
        results += (if (result.allowed) "y" else "n") + result.tokens
    }
    line(out, "K3", f[1], initial.toString(), results.joinToString(","))
}

/** The policy of the 25 `P3` fields from [at], names as given: the runtime checks them in order. */
private fun policy3(f: List<String>, at: Int): RetryPolicy =
    RetryPolicy.fromConfig(
        int(f[at]), integer(f[at + 1]), integer(f[at + 2]), double(f[at + 3]), f[at + 4], statuses(f[at + 5]), statuses(f[at + 6]),
        integer(f[at + 7]), optionalInteger(f[at + 8]), statuses(f[at + 9]), statuses(f[at + 10]), statuses(f[at + 11]),
        hexList(f[at + 12]), f[at + 13], f[at + 14], integer(f[at + 15]), integer(f[at + 16]), integer(f[at + 17]),
        integer(f[at + 18]), statuses(f[at + 19]), optionalInteger(f[at + 20]), optionalInteger(f[at + 21]), hexList(f[at + 22]),
        hexList(f[at + 23]), f[at + 24],
    )

/** A list of WTF-8 hex strings joined by `,`; `-` is the empty list (an empty field, one empty string). */
private fun hexList(field: String): List<String> = if (field == "-") emptyList() else field.split(',').map { wtf8(it) }

private fun optionalInteger(text: String): Long? = if (text == "-") null else integer(text)

/** The bytes of a hex field, whatever they hold. */
private fun bytes(text: String): ByteArray {
    if (text.length % 2 != 0 || text.any { it !in '0'..'9' && it !in 'a'..'f' }) {
        throw MalformedCase("not lower-case hex: $text")
    }
    return ByteArray(text.length / 2) { i -> text.substring(2 * i, 2 * i + 2).toInt(16).toByte() }
}

/** A retry budget sequence on one client's cell. */
private fun budgetCase(f: List<String>, out: StringBuilder) {
    expectFields(f, 7)
    val policy = RetryPolicy(budgetCapacity = integer(f[2]), budgetRetryCost = integer(f[3]), budgetTimeoutCost = integer(f[4]), budgetSuccessRefund = integer(f[5]))
    val cell = RetryBudgetCell(policy)
    val initial = cell.tokens
    val results = ArrayList<String>()
    for (event in if (f[6].isEmpty()) emptyList() else f[6].split(',')) {
        when {
            event == "r" || event == "t" || event.startsWith("a") -> {
                val kind = when (event) {
                    "r" -> BudgetKind.RETRY
                    "t" -> BudgetKind.TIMEOUT
                    else -> BudgetKind.parse(unhex(event.substring(1)))
                }
                val result = cell.tryAcquire(kind)
                results += (if (result.allowed) "y" else "n") + result.tokens
            }
            event.startsWith("s") -> results += "s" + cell.recordSuccess(integer(event.substring(1)))
            else -> throw MalformedCase("unknown budget event $event")
        }
    }
    line(out, "K", f[1], initial.toString(), results.joinToString(","))
}

/** The policy of the 19 `P2` fields from [at], names as given: the runtime checks them in order. */
private fun policy2(f: List<String>, at: Int): RetryPolicy {
    val headers = if (f[at + 12] == "-") emptyList() else f[at + 12].split(',').map { unhex(it) }
    return RetryPolicy.fromConfig(
        int(f[at]), integer(f[at + 1]), integer(f[at + 2]), double(f[at + 3]), f[at + 4], statuses(f[at + 5]), statuses(f[at + 6]),
        integer(f[at + 7]), if (f[at + 8] == "-") null else integer(f[at + 8]), statuses(f[at + 9]), statuses(f[at + 10]),
        statuses(f[at + 11]), headers, f[at + 13], f[at + 14], integer(f[at + 15]), integer(f[at + 16]), integer(f[at + 17]),
        integer(f[at + 18]),
    )
}

private fun flag(text: String, what: String): Boolean = when (text) {
    "1" -> true
    "0" -> false
    else -> throw MalformedCase("$what must be 1 or 0, not $text")
}

private fun tables(out: StringBuilder) {
    line(out, "B2", hex(RetryPolicies.BASE_PATH), hex(RetryPolicies.SOURCE_NAME))
    val p = RetryPolicies.DEFAULT_POLICY
    line(
        out, "P2", p.maxRetries.toString(), p.initialBackoffMs.toString(), p.maxBackoffMs.toString(), bits(p.multiplier),
        p.jitter.wireName, p.retryableStatuses.joinToString(","), p.rejectedStatuses.joinToString(","),
        p.retryAfterCapMs.toString(), p.deadlineMs?.toString() ?: "-", p.retryOnlyWithServerDelay.joinToString(","),
        p.keyInFlightStatuses.joinToString(","), p.keyReusedStatuses.joinToString(","),
        if (p.serverDirectiveHeaders.isEmpty()) "-" else p.serverDirectiveHeaders.joinToString(",") { hex(it) },
        p.retryAfterOverCap.wireName, p.unknownOperationClass.wireName, p.budgetCapacity.toString(), p.budgetRetryCost.toString(),
        p.budgetTimeoutCost.toString(), p.budgetSuccessRefund.toString(),
    )
    val operations = RetryPolicies.OPERATIONS
    for ((index, operation) in operations.withIndex()) {
        line(
            out, "O2", index.toString(), hex(operation.method), hex(operation.path), hexOrAbsent(operation.operationId),
            operation.replayClass.wireName, hexOrAbsent(operation.idempotencyHeader),
        )
    }
    for (entry in RetryPolicies.NON_REPLAYABLE_OPERATIONS) {
        val index = operations.indexOfFirst { it === entry.operation }
        line(out, "L2", index.toString(), hex(entry.method), hex(entry.pattern.pattern), hexOrAbsent(entry.idempotencyHeader))
    }
}

/** Hex of WTF-8 (UTF-8 that may encode lone surrogates) as a UTF-16 string built by hand. */
private fun wtf8(text: String): String {
    if (text.length % 2 != 0 || text.any { it !in '0'..'9' && it !in 'a'..'f' }) {
        throw MalformedCase("not lower-case hex: $text")
    }
    val bytes = IntArray(text.length / 2) { i -> text.substring(2 * i, 2 * i + 2).toInt(16) }
    val out = StringBuilder()
    var at = 0
    while (at < bytes.size) {
        val b = bytes[at]
        val count = when {
            b < 0x80 -> 0
            b >= 0xF0 -> 3
            b >= 0xE0 -> 2
            b >= 0xC0 -> 1
            else -> -1
        }
        if (count < 0 || at + count >= bytes.size) {
            throw MalformedCase("not WTF-8: $text")
        }
        var codePoint = if (count == 0) b else b and (0x3F shr count)
        for (k in 1..count) {
            codePoint = (codePoint shl 6) or (bytes[at + k] and 0x3F)
        }
        out.appendCodePoint(codePoint)
        at += count + 1
    }
    return out.toString()
}

private fun line(out: StringBuilder, vararg fields: String) {
    out.append(fields.joinToString("\t")).append('\n')
}

private fun expectFields(fields: List<String>, count: Int) {
    if (fields.size != count) {
        throw MalformedCase("${fields[0]} line has ${fields.size} fields, expected $count")
    }
}

/** A decimal integer: an optional `-` and ASCII digits. */
private fun integer(text: String): Long {
    val digits = text.removePrefix("-")
    if (digits.isEmpty() || digits.any { it !in '0'..'9' }) {
        throw MalformedCase("not a decimal integer: $text")
    }
    return text.toLongOrNull() ?: throw MalformedCase("not a 64-bit integer: $text")
}

private fun int(text: String): Int {
    val value = integer(text)
    if (value < Int.MIN_VALUE || value > Int.MAX_VALUE) {
        throw MalformedCase("not a 32-bit integer: $text")
    }
    return value.toInt()
}

private fun statuses(text: String): Set<Int> =
    if (text.isEmpty()) emptySet() else text.split(',').map { int(it) }.toCollection(LinkedHashSet())

/** A double from the 16 lower-case hex digits of its IEEE 754 bits. */
private fun double(text: String): Double {
    if (text.length != 16 || text.any { it !in '0'..'9' && it !in 'a'..'f' }) {
        throw MalformedCase("not 16 hex digits of a double: $text")
    }
    return Double.fromBits(java.lang.Long.parseUnsignedLong(text, 16))
}

private fun bits(value: Double): String = java.lang.Long.toHexString(value.toRawBits()).padStart(16, '0')

private fun optionalHex(text: String): String? = if (text == "-") null else unhex(text)

private fun unhex(text: String): String {
    if (text.length % 2 != 0 || text.any { it !in '0'..'9' && it !in 'a'..'f' }) {
        throw MalformedCase("not lower-case hex: $text")
    }
    val bytes = ByteArray(text.length / 2) { i -> text.substring(2 * i, 2 * i + 2).toInt(16).toByte() }
    return strictUtf8(bytes, "hex field $text")
}

private fun strictUtf8(bytes: ByteArray, what: String): String {
    val decoder = Charsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT)
    return try {
        decoder.decode(ByteBuffer.wrap(bytes)).toString()
    } catch (e: CharacterCodingException) {
        throw MalformedCase("$what is not valid UTF-8")
    }
}

private fun hex(text: String): String {
    val out = StringBuilder()
    for (b in text.toByteArray(Charsets.UTF_8)) {
        val v = b.toInt() and 0xff
        out.append("0123456789abcdef"[v shr 4]).append("0123456789abcdef"[v and 0xf])
    }
    return out.toString()
}

private fun hexOrAbsent(text: String?): String = if (text == null) "-" else hex(text)
