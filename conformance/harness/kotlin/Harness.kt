// Conformance harness for the Kotlin module retrygen generates (see conformance/README.md).
// Run as: java -cp <classes>:<kotlin-stdlib> HarnessKt CASEFILE
// Compiled together with the module (RetryPolicies.kt and RetryRuntime.kt) rendered with default
// options (package retrygen.generated, object RetryPolicies). Standard library only.

import retrygen.generated.Decision
import retrygen.generated.DecisionInput
import retrygen.generated.Jitter
import retrygen.generated.Outcome
import retrygen.generated.ReplayClass
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
            try {
                runCase(line.split('\t'), out)
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
        "C" -> {
            expectFields(fields, 4)
            val result = RetryPolicies.classify(unhex(fields[2]), unhex(fields[3]))
            line(out, "C", fields[1], result.replayClass.wireName, hexOrAbsent(result.operation?.operationId))
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
        "N" -> {
            expectFields(fields, 4)
            val listed = RetryPolicies.isNonReplayable(unhex(fields[2]), unhex(fields[3]))
            line(out, "N", fields[1], if (listed) "1" else "0")
        }
        "T" -> {
            expectFields(fields, 1)
            tables(out)
        }
        else -> throw MalformedCase("unknown line type ${fields[0]}")
    }
}

private fun decideCase(f: List<String>, out: StringBuilder) {
    expectFields(f, 22)
    val policy = RetryPolicy(
        maxRetries = int(f[2]),
        initialBackoffMs = integer(f[3]),
        maxBackoffMs = integer(f[4]),
        multiplier = double(f[5]),
        jitter = Jitter.entries.firstOrNull { it.wireName == f[6] } ?: throw MalformedCase("unknown jitter ${f[6]}"),
        retryableStatuses = statuses(f[7]),
        rejectedStatuses = statuses(f[8]),
        retryAfterCapMs = integer(f[9]),
        deadlineMs = if (f[10] == "-") null else integer(f[10]),
    )
    val replayClass = ReplayClass.entries.firstOrNull { it.wireName == f[11] } ?: throw MalformedCase("unknown class ${f[11]}")
    val hasKey = when (f[12]) {
        "1" -> true
        "0" -> false
        else -> throw MalformedCase("has_key must be 1 or 0, not ${f[12]}")
    }
    val outcome = when (f[13]) {
        "status" -> Outcome.Status(int(f[14]), optionalHex(f[15]), optionalHex(f[16]))
        "connect" -> Outcome.Connect
        "transport" -> Outcome.Transport
        "aborted" -> Outcome.Aborted
        else -> throw MalformedCase("unknown outcome ${f[13]}")
    }
    val input = DecisionInput(
        replayClass = replayClass,
        hasIdempotencyKey = hasKey,
        outcome = outcome,
        retriesUsed = int(f[17]),
        elapsedMs = integer(f[18]),
        previousDelayMs = integer(f[19]),
        nowMs = integer(f[20]),
        random = double(f[21]),
    )
    val decision: Decision = RetryPolicies.decide(policy, input)
    line(out, "D", f[1], if (decision.retry) "1" else "0", decision.delayMs.toString(), decision.reason.wireName)
}

private fun tables(out: StringBuilder) {
    line(out, "B", hex(RetryPolicies.BASE_PATH), hex(RetryPolicies.SOURCE_NAME))
    val p = RetryPolicies.DEFAULT_POLICY
    line(
        out, "P", p.maxRetries.toString(), p.initialBackoffMs.toString(), p.maxBackoffMs.toString(), bits(p.multiplier),
        p.jitter.wireName, p.retryableStatuses.joinToString(","), p.rejectedStatuses.joinToString(","),
        p.retryAfterCapMs.toString(), p.deadlineMs?.toString() ?: "-",
    )
    for ((index, operation) in RetryPolicies.OPERATIONS.withIndex()) {
        line(
            out, "O", index.toString(), hex(operation.method), hex(operation.path), hexOrAbsent(operation.operationId),
            operation.replayClass.wireName, hex(operation.pattern.pattern),
        )
    }
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
