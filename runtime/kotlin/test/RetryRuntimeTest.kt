// Unit tests of RetryRuntime.kt, compiled with it in one kotlinc call and run with `java`
// (see README.md). No test library: `main` runs every test, prints failures and exits non-zero.

package retrygen.generated

import java.lang.management.ManagementFactory
import kotlin.system.exitProcess

private val failures = ArrayList<String>()
private var checks = 0

private fun <T> expect(
    what: String,
    actual: T,
    expected: T,
) {
    checks++
    if (actual != expected) {
        failures += "$what: expected <$expected>, got <$actual>"
    }
}

/** [this] with some values changed (DecisionInput is not a data class: no copy). */
private fun DecisionInput.with(
    outcome: Outcome = this.outcome,
    retriesUsed: Long = this.retriesUsed,
    elapsedMs: Long = this.elapsedMs,
    previousDelayMs: Long = this.previousDelayMs,
    random: Double = this.random,
    budgetTokens: Long? = this.budgetTokens,
): DecisionInput =
    DecisionInput(replayClass, hasIdempotencyKey, outcome, retriesUsed, elapsedMs, previousDelayMs, nowMs, random, budgetTokens, timedOut)

private fun expectThrows(
    what: String,
    block: () -> Unit,
) {
    checks++
    try {
        block()
        failures += "$what: no exception"
    } catch (expected: UnsupportedOperationException) {
        // The collection is unmodifiable.
    }
}

private fun op(
    method: String,
    route: String,
    id: String?,
    replayClass: ReplayClass = ReplayClass.IDEMPOTENT,
    header: String? = null,
): Operation = Operation(method, route, route, id, replayClass, header)

/** A small hand-written table; its order is the table order, chosen against the match order. */
private val handOperations: List<Operation> =
    listOf(
        op("GET", "/", "root"),
        op("GET", "/sandboxes/{id}", "getSandbox"),
        op("DELETE", "/sandboxes/{id}", "deleteSandbox"),
        op("GET", "/sandboxes/{id}", "getSandboxAgain"),
        op("GET", "/sandboxes/{id}/logs", "sandboxLogs"),
        op("GET", "/sandboxes/templates", "listTemplates"),
        op("GET", "/sandboxes/templates/{name}/raw", "templateRaw"),
        op("GET", "/files/{name}.{ext}", "fileWithExt"),
        op("GET", "/files/{name}.json", "fileJson"),
        op("GET", "/files/v{version}", "fileVersion"),
        op("GET", "/order/{x}v", "endsWithV"),
        op("GET", "/order/v{x}", "startsWithV"),
        op("GET", "/order/{a}\uD83D\uDE00{b}", "emoji"),
        op("GET", "/order/{a}\uE000a{b}", "privateUse"),
        op("GET", "/m/{a}.txt", "getText"),
        op("DELETE", "/m/{b}.txt", "deleteText"),
        op("POST", "/caf%C3%A9/items/", "postCafe", ReplayClass.NON_REPLAYABLE),
        op("POST", "/keyed", "postKeyed", ReplayClass.KEYED, "Idempotency-Key"),
        Operation("POST", "/oauth/token", "/oauth/token#refresh", null, ReplayClass.NON_REPLAYABLE, null),
    )

private fun idOf(
    table: OperationTable,
    method: String,
    path: String,
): String? = table.classify(method, path).operation?.operationId ?: table.classify(method, path).operation?.path

private fun matcherTests() {
    val table = OperationTable("/v1", handOperations)

    fun id(
        method: String,
        path: String,
    ) = idOf(table, method, path)
    expect("literal beats parameter", id("GET", "/v1/sandboxes/templates"), "listTemplates")
    expect("parameter", id("GET", "/v1/sandboxes/abc"), "getSandbox")
    expect("first operation of a method wins", id("get", "/v1/sandboxes/abc"), "getSandbox")
    expect("backtracking out of a literal branch", id("GET", "/v1/sandboxes/templates/logs"), "sandboxLogs")
    expect("literal branch deeper", id("GET", "/v1/sandboxes/templates/t/raw"), "templateRaw")
    expect("more literal bytes first", id("GET", "/v1/files/a.json"), "fileJson")
    expect("every split tried", id("GET", "/v1/files/a.json.json"), "fileJson")
    expect("mixed with two parameters", id("GET", "/v1/files/a.txt"), "fileWithExt")
    expect("literal prefix piece", id("GET", "/v1/files/v2"), "fileVersion")
    expect("no piece matches", id("GET", "/v1/files/xv2"), null)
    expect("a literal piece before a parameter piece", id("GET", "/v1/order/vav"), "startsWithV")
    expect("code point order, not UTF-16 order", id("GET", "/v1/order/p\uE000aq\uD83D\uDE00r"), "privateUse")
    expect("equal mixed segments share a node", id("DELETE", "/v1/m/x.txt"), "deleteText")
    expect("percent-decoded literal, lower-case hex", id("POST", "/v1/caf%c3%a9/items"), "postCafe")
    expect("decoded request against decoded literal", id("POST", "/v1/caf\u00E9/items/"), "postCafe")
    expect("invalid UTF-8 stays undecoded", id("POST", "/v1/caf%E9/items"), null)
    expect("query and fragment cut", id("POST", "/v1/caf%C3%A9/items/?a=/b#c"), "postCafe")
    expect("base path alone", id("GET", "/v1"), "root")
    expect("base path and slash", id("GET", "/v1/"), "root")
    expect("empty path", id("GET", ""), "root")
    expect("without base path", id("GET", "/sandboxes/abc"), "getSandbox")
    expect("base path is a whole segment", id("GET", "/v1x/sandboxes/abc"), null)
    expect("empty segment is no parameter", id("GET", "/v1/sandboxes//logs"), null)
    expect("route without its suffix", id("POST", "/v1/oauth/token"), "/oauth/token#refresh")
    val miss = table.classify("patch", "/v1/sandboxes/abc")
    expect("method miss: no operation", miss.operation, null)
    expect("method miss: method default", miss.replayClass, ReplayClass.NON_REPLAYABLE)
    expect("unknown path, QUERY", table.classify("query", "/nowhere").replayClass, ReplayClass.IDEMPOTENT)
    expect("keyed class", table.classify("POST", "/keyed").replayClass, ReplayClass.KEYED)
    expect("idempotency header", table.operationById("postKeyed")?.idempotencyHeader, "Idempotency-Key")
    expect("operation by id", table.operationById("deleteSandbox")?.method, "DELETE")
    expect("unknown id", table.operationById("nope"), null)
    expect("classify hands out the table's operation", table.classify("GET", "/").operation === table.operations[0], true)
}

private fun patternTests() {
    val table = OperationTable("", handOperations)

    fun pattern(id: String) = table.operationById(id)!!.pattern.pattern
    expect("root pattern", pattern("root"), "^//?$")
    expect("safe pattern", RetryRuntime.safePattern("/a.b/{p}"), "^/(?:a|%61)(?:\\.|%2[Ee])(?:b|%62)/[^/]+/?$")
    expect("encoded slash only encoded", RetryRuntime.safePattern("/x%2Fy"), "^/(?:x|%78)%2[Ff](?:y|%79)/?$")
    expect("escapes", RetryRuntime.safePattern("/\$"), "^/(?:\\\$|%24)/?$")
    val logs = table.operationById("sandboxLogs")!!.pattern
    expect("parameter pattern", logs.matches("/sandboxes/sb1/logs/"), true)
    expect("encoded literal", logs.matches("/sandboxes/sb1/l%6Fgs"), true)
    expect("whole path", logs.matches("/sandboxes/sb1/logs/x"), false)
    expect("mixed, escaped dot", table.operationById("fileWithExt")!!.pattern.matches("/files/axb"), false)
    val cafe = table.operationById("postCafe")!!.pattern
    expect("decoded literal", cafe.matches("/caf\u00e9/items"), true)
    expect("encoded either case", cafe.matches("/caf%c3%a9/items/"), true)
    expect("safe list: non-replayable and keyed", table.nonReplayableOperations.map { it.method }, listOf("POST", "POST", "POST"))
    expect("listed", table.isNonReplayable("POST", "/caf%C3%A9/items/"), true)
    expect("method compared exactly", table.isNonReplayable("post", "/caf%C3%A9/items"), false)
    expect("whole path", table.isNonReplayable("POST", "/caf%C3%A9/items/x"), false)
    val keyed =
        OperationTable(
            "",
            listOf(op("POST", "/k", "k", ReplayClass.KEYED, "Idempotency-Key"), op("POST", "/n", "n", ReplayClass.NON_REPLAYABLE)),
        )
    expect("keyed entry names its header", keyed.findSafeListEntry("POST", "/k")?.idempotencyHeader, "Idempotency-Key")
    expect("non-replayable entry has none", keyed.findSafeListEntry("POST", "/n")?.idempotencyHeader, null)
}

/** No expression is compiled until a pattern or the non-replayable list is used. */
private fun lazyPatternTests() {
    val operations = listOf(op("GET", "/a", "a"), op("POST", "/b", "b", ReplayClass.NON_REPLAYABLE))
    val table = OperationTable("", operations)
    table.classify("GET", "/a")
    val delegate = Operation::class.java.getDeclaredField("pattern\$delegate")
    delegate.isAccessible = true

    fun compiled() = operations.map { (delegate.get(it) as Lazy<*>).isInitialized() }
    expect("no regex after building and classifying", compiled(), listOf(false, false))
    expect("the list", table.isNonReplayable("POST", "/b/"), true)
    expect("only the listed operations compiled", compiled(), listOf(false, true))
}

@Suppress("UNCHECKED_CAST")
private fun immutabilityTests() {
    val source = ArrayList(handOperations)
    val table = OperationTable("", source)
    source.clear()
    expect("the table copies its operations", table.operations.size, handOperations.size)
    expectThrows("operations") { (table.operations as MutableList<Operation>).add(handOperations[0]) }
    expectThrows("safe list") { (table.nonReplayableOperations as MutableList<SafeListEntry>).clear() }
    expectThrows("directive headers") { (RetryPolicy().serverDirectiveHeaders as MutableList<String>).clear() }
    expectThrows("idempotent methods") { (RetryRuntime.IDEMPOTENT_METHODS as MutableSet<String>).add("POST") }
    expectThrows("contract statuses") { (RetryPolicy().retryableStatuses as MutableSet<Int>).add(404) }
    expectThrows("rejected statuses") { (RetryPolicy.CONTRACT_REJECTED_STATUSES as MutableSet<Int>).clear() }
    expectThrows("status sets") { (RetryRuntime.statusSet(500) as MutableSet<Int>).add(404) }
    expect("status set order", RetryRuntime.statusSet(503, 500, 503).toList(), listOf(503, 500))
    val javaConstructors =
        RetryPolicy::class.java.constructors
            .map { it.parameterCount }
            .toSet()
    expect("@JvmOverloads constructors", (0..19).all { it in javaConstructors }, true)
}

private fun serverDelayTests() {
    val now = 784_111_777_000L // Sun, 06 Nov 1994 08:49:37 GMT

    fun delay(
        retryAfter: String?,
        retryAfterMs: String? = null,
        nowMs: Long = now,
    ) = RetryRuntime.serverDelayMs(retryAfter, retryAfterMs, nowMs)
    expect("IMF-fixdate", delay("Sun, 06 Nov 1994 08:49:47 GMT"), 10_000L)
    expect("RFC 850", delay("Sunday, 06-Nov-94 08:49:47 GMT"), 10_000L)
    expect("asctime, space and one digit", delay("Sun Nov  6 08:49:47 1994"), 10_000L)
    expect("asctime, two digits", delay("Sun Nov 06 08:49:47 1994"), 10_000L)
    expect("asctime, one digit only", delay("Sun Nov 6 08:49:47 1994"), null)
    expect("day name not checked against the date", delay("Mon, 06 Nov 1994 08:49:47 GMT"), 10_000L)
    expect("lower-case month", delay("Sun, 06 nov 1994 08:49:47 GMT"), null)
    expect("past date", delay("Sun, 06 Nov 1994 08:49:27 GMT"), 0L)
    expect("second 60", delay("Sun, 06 Nov 1994 08:49:60 GMT"), 23_000L)
    expect("Feb 29 1995", delay("Wed, 29 Feb 1995 00:00:00 GMT"), null)
    expect("RFC 850 year 74 seen from 2024", delay("Sunday, 01-Jan-74 00:00:00 GMT", nowMs = 1_704_067_200_000L), 1_577_923_200_000L)
    expect("RFC 850 year 75 seen from 2024", delay("Sunday, 01-Jan-75 00:00:00 GMT", nowMs = 1_704_067_200_000L), 0L)
    expect("seconds", delay(" 7\t"), 7_000L)
    expect("negative seconds", delay("-3"), 0L)
    expect("fraction in Retry-After", delay("1.5"), null)
    expect("garbage", delay("soon"), null)
    expect("16 digits", delay("1000000000000000"), RetryRuntime.BEYOND_ANY_CAP_MS)
    expect("15 digits", delay("000000000000007"), 7_000L)
    expect("retry-after-ms wins", delay("9", "1500.9"), 1_500L)
    expect("invalid retry-after-ms", delay("9", "1.5.1"), 9_000L)
    expect("16 digits and a fraction", delay(null, "1000000000000000.5"), RetryRuntime.BEYOND_ANY_CAP_MS)
    expect("negative retry-after-ms", delay(null, "-1000000000000000000000"), 0L)
    expect("non-ASCII digits", delay(null, "\uFF11"), null)
}

private fun backoffTests() {
    fun backoff(
        jitter: Jitter,
        retriesUsed: Long,
        random: Double = 0.5,
        previousDelayMs: Long = 0,
    ) = RetryRuntime.backoffMs(RetryPolicy(maxRetries = 10, jitter = jitter), retriesUsed, previousDelayMs, random)
    expect("full", (0L..3L).map { backoff(Jitter.FULL, it) }, listOf(250L, 500L, 1000L, 2000L))
    expect("equal", (0L..2L).map { backoff(Jitter.EQUAL, it) }, listOf(375L, 750L, 1500L))
    expect("none", (0L..2L).map { backoff(Jitter.NONE, it) }, listOf(500L, 1000L, 2000L))
    expect("capped", backoff(Jitter.FULL, 6), 15_000L)
    expect("capped, no jitter", backoff(Jitter.NONE, 100), 30_000L)
    expect("decorrelated from the initial backoff", backoff(Jitter.DECORRELATED, 0), 1000L)
    expect("decorrelated from the previous delay", backoff(Jitter.DECORRELATED, 5, previousDelayMs = 1000), 1750L)
    expect("decorrelated capped", backoff(Jitter.DECORRELATED, 1, previousDelayMs = 40_000), 30_000L)
    expect("equal jitter reaches its bound", backoff(Jitter.EQUAL, 0, random = 0.9999999999999999), 500L)
    expect("floor", backoff(Jitter.FULL, 0, random = 0.0031), 1L)
}

private fun decideTests() {
    val policy = RetryPolicy()

    fun decide(
        replayClass: ReplayClass,
        outcome: Outcome,
        retriesUsed: Long = 0,
        hasKey: Boolean = false,
        policy: RetryPolicy = RetryPolicy(),
        elapsedMs: Long = 0,
    ) = RetryRuntime.decide(policy, DecisionInput(replayClass, hasKey, outcome, retriesUsed, elapsedMs, 0, 784_111_777_000L, 0.5))
    val n = ReplayClass.NON_REPLAYABLE
    val i = ReplayClass.IDEMPOTENT
    expect("503, non-replayable", decide(n, Outcome.Status(503)), Decision(false, 0, DecisionReason.NOT_REPLAYABLE))
    // A granted 429 is throttled (contract v3, T1), with the default policy's v2 base and cost.
    expect("429, non-replayable", decide(n, Outcome.Status(429)), Decision(true, 250, DecisionReason.REJECTED_STATUS, null, true))
    expect("connect", decide(n, Outcome.Connect, retriesUsed = 2), Decision(true, 1000, DecisionReason.CONNECT_FAILURE))
    expect("transport, non-replayable", decide(n, Outcome.Transport).reason, DecisionReason.NOT_REPLAYABLE)
    expect(
        "transport, keyed with key",
        decide(ReplayClass.KEYED, Outcome.Transport, hasKey = true).reason,
        DecisionReason.TRANSPORT_FAILURE,
    )
    expect("502, keyed without key", decide(ReplayClass.KEYED, Outcome.Status(502)).reason, DecisionReason.NOT_REPLAYABLE)
    expect("Retry-After", decide(i, Outcome.Status(503, "7"), retriesUsed = 1).delayMs, 7000L)
    expect("over the cap", decide(i, Outcome.Status(503, "120")).reason, DecisionReason.RETRY_AFTER_OVER_CAP)
    expect("exhausted", decide(i, Outcome.Status(500), retriesUsed = 3).reason, DecisionReason.EXHAUSTED)
    expect("404", decide(i, Outcome.Status(404)).reason, DecisionReason.STATUS_NOT_RETRYABLE)
    expect("no_retry", decide(ReplayClass.NO_RETRY, Outcome.Connect).reason, DecisionReason.NO_RETRY_OPERATION)
    expect("aborted first", decide(ReplayClass.NO_RETRY, Outcome.Aborted, retriesUsed = 9).reason, DecisionReason.ABORTED)
    // A refused certificate stops before every other rule (R1): no class or budget makes it retryable.
    expect(
        "certificate first",
        decide(ReplayClass.NO_RETRY, Outcome.Certificate, retriesUsed = 9).reason,
        DecisionReason.CERTIFICATE_FAILURE,
    )
    expect("certificate, idempotent", decide(i, Outcome.Certificate).retry, false)
    // Origin scope (C5): by hand, so that every language compares the same three parts.
    expect("same origin", RetryRuntime.inScope("https://api.example.com/v1", "HTTPS://API.example.com:0443/v1/x"), true)
    expect("other host", RetryRuntime.inScope("https://api.example.com/v1", "https://other.example/v1/x"), false)
    expect("other port", RetryRuntime.inScope("http://a:80/v1", "http://a:8080/v1"), false)
    expect("user info dropped", RetryRuntime.inScope("http://u@p@a/v1", "http://a:80"), true)
    expect("ipv6 host", RetryRuntime.inScope("http://[::1]:8080/", "http://[::1]/"), false)
    expect("no base origin", RetryRuntime.inScope("/v1", "https://other.example/"), true)
    expect("no target origin", RetryRuntime.inScope("https://a/v1", "/v1/items"), true)
    expect("other scheme", RetryRuntime.inScope("http://a/", "https://a/"), false)
    expect(
        "deadline",
        decide(i, Outcome.Status(503), policy = policy.newBuilder().deadlineMs(1000).build(), elapsedMs = 900).reason,
        DecisionReason.DEADLINE,
    )
    expect("wire names", DecisionReason.RETRY_AFTER_OVER_CAP.wireName, "retry_after_over_cap")
}

private fun expectInvalid(
    what: String,
    key: String,
    block: () -> Unit,
) {
    checks++
    try {
        block()
        failures += "$what: no RetryInputException"
    } catch (e: RetryInputException) {
        if (e.key != key) {
            failures += "$what: expected key <$key>, got <${e.key}>"
        }
    }
}

private val statusInput = DecisionInput(ReplayClass.IDEMPOTENT, false, Outcome.Status(503), 0, 0, 0, 784_111_777_000L, 0.5)

private fun validationTests() {
    fun decideWith(policy: RetryPolicy) = RetryRuntime.decide(policy, statusInput)
    expectInvalid("max_retries", "policy.max_retries") { decideWith(RetryPolicy(maxRetries = 101)) }
    expectInvalid("multiplier NaN", "policy.multiplier") { decideWith(RetryPolicy(multiplier = Double.NaN)) }
    expectInvalid("header token", "policy.server_directive_headers") { decideWith(RetryPolicy(serverDirectiveHeaders = listOf("x y"))) }
    expectInvalid("non-ASCII header", "policy.server_directive_headers") {
        decideWith(RetryPolicy(serverDirectiveHeaders = listOf("caf\u00e9")))
    }
    expectInvalid("initial above max", "policy.max_backoff_ms") { decideWith(RetryPolicy(initialBackoffMs = 2000, maxBackoffMs = 1000)) }
    expectInvalid("budget capacity", "policy.budget_capacity") { decideWith(RetryPolicy(budgetCapacity = -1)) }

    fun config(
        maxRetries: Int = 3,
        jitter: String = "full",
        overCap: String = "refuse",
        unknown: String = "method_default",
        capacity: Long = 500,
    ) = RetryPolicy.fromConfig(
        maxRetries,
        500,
        30_000,
        2.0,
        jitter,
        setOf(503),
        setOf(429),
        60_000,
        null,
        emptySet(),
        setOf(409),
        setOf(422),
        listOf("x-should-retry"),
        overCap,
        unknown,
        capacity,
        5,
        10,
        1,
    )
    expect("fromConfig", config(), RetryPolicy(retryableStatuses = setOf(503)))
    expectInvalid("jitter name exact", "policy.jitter") { config(jitter = "Full") }
    expectInvalid("jitter name never trimmed", "policy.jitter") { config(jitter = " full") }
    expectInvalid("first bad key in table order", "policy.max_retries") { config(maxRetries = -1, jitter = "x", capacity = -1) }
    expectInvalid("over-cap mode", "policy.retry_after_over_cap") { config(overCap = "ignore") }
    expectInvalid("unknown class", "policy.unknown_operation_class") { config(unknown = "idempotent") }
    expectInvalid("class name", "input.class") { ReplayClass.parse("Idempotent") }
    expect("class name", ReplayClass.parse("keyed"), ReplayClass.KEYED)
    expectInvalid("failure name", "input.outcome") { Outcome.failure("timeout") }
    expect("failure name", Outcome.failure("connect"), Outcome.Connect)
    expectInvalid("budget kind", "input.budget_kind") { BudgetKind.parse("slow") }
    val policy = RetryPolicy()
    expectInvalid("status", "input.status") { RetryRuntime.decide(policy, statusInput.with(outcome = Outcome.Status(600))) }
    expectInvalid(
        "retries_used",
        "input.retries_used",
    ) { RetryRuntime.decide(policy, statusInput.with(retriesUsed = 9_007_199_254_740_992L)) }
    expectInvalid("elapsed_ms", "input.elapsed_ms") { RetryRuntime.decide(policy, statusInput.with(elapsedMs = -1)) }
    expectInvalid("previous_delay_ms", "input.previous_delay_ms") { RetryRuntime.decide(policy, statusInput.with(previousDelayMs = -1)) }
    for (random in listOf(Double.NaN, 1.0, -0.0 - 1e-300, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY)) {
        expectInvalid("random $random", "input.random") { RetryRuntime.decide(policy, statusInput.with(random = random)) }
    }
    expectInvalid("random NaN on an aborted request", "input.random") {
        RetryRuntime.decide(policy, statusInput.with(outcome = Outcome.Aborted, random = Double.NaN))
    }
    expectInvalid("budget tokens", "input.budget_tokens") { RetryRuntime.decide(policy, statusInput.with(budgetTokens = 501)) }
    val asArgument: IllegalArgumentException = RetryInputException("k")
    expect("an IllegalArgumentException", asArgument.message, "invalid input: k")
}

private fun decideV2Tests() {
    val policy = RetryPolicy()

    fun decide(
        outcome: Outcome,
        replayClass: ReplayClass = ReplayClass.IDEMPOTENT,
        hasKey: Boolean = false,
        policy: RetryPolicy = RetryPolicy(),
        tokens: Long? = null,
        timedOut: Boolean = false,
    ) = RetryRuntime.decide(policy, DecisionInput(replayClass, hasKey, outcome, 0, 0, 0, 784_111_777_000L, 0.5, tokens, timedOut))
    val r = DecisionReason.SERVER_SAID_NO
    expect("directive false", decide(Outcome.Status(503, directive = " FALSE\t")).reason, r)
    expect("directive not ASCII-folded", decide(Outcome.Status(503, directive = "fal\u017Fe")).reason, DecisionReason.RETRYABLE_STATUS)
    expect("directive true", decide(Outcome.Status(404, directive = "true")), Decision(true, 250, DecisionReason.SERVER_SAID_YES))
    expect(
        "directive true never makes a request replayable",
        decide(Outcome.Status(404, directive = "true"), ReplayClass.NON_REPLAYABLE).reason,
        DecisionReason.STATUS_NOT_RETRYABLE,
    )
    expect(
        "directives off",
        decide(Outcome.Status(503, directive = "false"), policy = policy.newBuilder().serverDirectiveHeaders(emptyList()).build()).reason,
        DecisionReason.RETRYABLE_STATUS,
    )
    expect("key in flight", decide(Outcome.Status(409), ReplayClass.KEYED, hasKey = true).reason, DecisionReason.KEY_IN_FLIGHT)
    expect("key reused", decide(Outcome.Status(422), ReplayClass.KEYED, hasKey = true).reason, DecisionReason.KEY_REUSED)
    expect("409 without key", decide(Outcome.Status(409), ReplayClass.KEYED).reason, DecisionReason.STATUS_NOT_RETRYABLE)
    expect(
        "no server delay",
        decide(Outcome.Status(429), policy = policy.newBuilder().retryOnlyWithServerDelay(setOf(429)).build()).reason,
        DecisionReason.NO_SERVER_DELAY,
    )
    expect(
        "clamp",
        decide(Outcome.Status(503, "120"), policy = policy.newBuilder().retryAfterOverCap(OverCapMode.CLAMP).build()),
        Decision(true, 60_000, DecisionReason.RETRYABLE_STATUS),
    )
    expect("budget", decide(Outcome.Connect, tokens = 500), Decision(true, 250, DecisionReason.CONNECT_FAILURE, 495))
    expect("timeout cost", decide(Outcome.Transport, tokens = 10, timedOut = true).budgetTokens, 0L)
    expect("budget exhausted", decide(Outcome.Status(503), tokens = 4), Decision(false, 0, DecisionReason.BUDGET_EXHAUSTED, 4))
    expect("stop keeps the tokens", decide(Outcome.Status(404), tokens = 7).budgetTokens, 7L)
}

private fun budgetTests() {
    val policy = RetryPolicy()
    expect("new", RetryRuntime.budgetNew(policy), 500L)
    expect("acquire", RetryRuntime.budgetTryAcquire(policy, 500, BudgetKind.RETRY), BudgetAcquisition(true, 495))
    expect("refused", RetryRuntime.budgetTryAcquire(policy, 9, BudgetKind.TIMEOUT), BudgetAcquisition(false, 9))
    expect(
        "disabled",
        RetryRuntime.budgetTryAcquire(policy.newBuilder().budgetCapacity(0).build(), 0, BudgetKind.RETRY),
        BudgetAcquisition(true, 0),
    )
    expect("success refund", RetryRuntime.budgetRecordSuccess(policy, 400, 0), 401L)
    expect("release", RetryRuntime.budgetRecordSuccess(policy, 400, 5), 405L)
    expect("never above the capacity", RetryRuntime.budgetRecordSuccess(policy, 499, 10), 500L)
    expectInvalid("release", "input.budget_release") { RetryRuntime.budgetRecordSuccess(policy, 400, -1) }
    expectInvalid("cell policy", "policy.budget_retry_cost") { RetryBudgetCell(policy.newBuilder().budgetRetryCost(0).build()) }
    val cell = RetryBudgetCell(policy)
    var granted = 0
    while (cell.tryAcquire(BudgetKind.RETRY).allowed) {
        granted++
    }
    expect("100 retries empty the bucket", granted, 100)
    expect("success gives back", cell.recordSuccess(5), 5L)

    // Threads race on one cell: every granted retry takes exactly its cost, none is lost.
    val shared =
        RetryBudgetCell(
            policy
                .newBuilder()
                .budgetCapacity(1_000_000)
                .budgetRetryCost(1)
                .build(),
        )
    val grants =
        java.util.concurrent.atomic
            .AtomicLong()
    val threads =
        (1..4).map {
            Thread {
                repeat(50_000) {
                    val decision = shared.decide(statusInput.with(outcome = Outcome.Connect))
                    if (decision.retry) {
                        grants.incrementAndGet()
                    }
                    shared.recordSuccess(0)
                }
            }
        }
    threads.forEach { it.start() }
    threads.forEach { it.join() }
    expect("threads: every retry granted", grants.get(), 200_000L)
    expect("threads: the state adds up", shared.tokens, 1_000_000L)
    val small =
        RetryBudgetCell(
            policy
                .newBuilder()
                .budgetCapacity(1000)
                .budgetRetryCost(1)
                .budgetSuccessRefund(0)
                .build(),
        )
    val smallGrants =
        java.util.concurrent.atomic
            .AtomicLong()
    val racers =
        (1..4).map {
            Thread {
                repeat(1000) {
                    if (small.decide(statusInput.with(outcome = Outcome.Connect)).retry) {
                        smallGrants.incrementAndGet()
                    }
                }
            }
        }
    racers.forEach { it.start() }
    racers.forEach { it.join() }
    expect("threads: exactly the capacity granted", smallGrants.get(), 1000L)
    expect("threads: empty", small.tokens, 0L)
}

private fun classifierTests() {
    val table =
        OperationTable(
            "/v1",
            listOf(
                op("GET", "/sandboxes/{id}/logs", "logs", ReplayClass.NO_RETRY),
                op("POST", "/sandboxes", "create", ReplayClass.NON_REPLAYABLE),
            ),
        )

    fun id(c: Classification) = c.operation?.operationId
    expect("spec base", id(table.classify("GET", "/v1/sandboxes/s/logs")), "logs")
    expect("full URL", id(table.classify("POST", "https://h.example:8443/v1/sandboxes?x#y")), "create")
    expect("scheme in any case", id(table.classify("POST", "HTTP+x.y-z://h/v1/sandboxes")), "create")
    expect("relative target", id(table.classify("POST", "sandboxes")), "create")
    expect("no authority end", table.classify("POST", "http://h").replayClass, ReplayClass.NON_REPLAYABLE)
    val proxy = table.classifier("https://gw.example/proxy/v1//?q")
    expect("base path of a URL", proxy.basePath, "/proxy/v1")
    expect("configured base", id(proxy.classify("GET", "/proxy/v1/sandboxes/s/logs")), "logs")
    expect("spec base unknown to it", id(table.classify("GET", "/proxy/v1/sandboxes/s/logs")), null)
    expect("empty base", table.classifier("/").basePath, "")
    val strict = table.classifier(null, UnknownOperationClass.NO_RETRY)
    expect("unknown class", strict.classify("GET", "/other").replayClass, ReplayClass.NO_RETRY)
    expect("matched keeps its class", strict.classify("POST", "/v1/sandboxes").replayClass, ReplayClass.NON_REPLAYABLE)
    expect("unknown class by name", table.classifier(null, "non_replayable").classify("GET", "/x").replayClass, ReplayClass.NON_REPLAYABLE)
    expectInvalid("lone high surrogate in the path", "input.path") { table.classify("GET", "/\uD800") }
    expectInvalid("lone low surrogate in a query", "input.path") { table.classify("GET", "/a?\uDC00") }
    expectInvalid("method", "input.method") { table.classify("\uDC00", "/a") }
    expectInvalid("base", "input.base") { table.classifier("/v\uD800") }
    expectInvalid("base before the class name", "input.base") { table.classifier("\uD800", "x") }
    expectInvalid("unknown class name", "policy.unknown_operation_class") { table.classifier(null, "idempotent") }
    expect("a pair is fine", table.classify("GET", "/\uD83D\uDE00").operation, null)
    expect("strict decoder: overlong kept", RetryRuntime.percentDecode("%C0%AE"), "%C0%AE")
    expect("strict decoder: surrogate kept", RetryRuntime.percentDecode("%ED%A0%80"), "%ED%A0%80")
    expect("strict decoder: above U+10FFFF kept", RetryRuntime.percentDecode("%F4%90%80%80"), "%F4%90%80%80")
    expect("strict decoder: truncated kept", RetryRuntime.percentDecode("a%C3"), "a%C3")
    expect("noncharacter decoded", RetryRuntime.percentDecode("%EF%BF%BE"), "\uFFFE")
}

/**
 * Classify allocates nothing (issue 13): the thread's allocation counter does not move over calls
 * covering every branch (literal, mixed, backtracking, percent escapes valid and not, full
 * URL, relative target, configured base, method miss, unknown path), once the per-thread decode
 * buffer exists.
 */
private fun allocationTests() {
    val table = OperationTable("/v1", handOperations)
    val proxy = table.classifier("https://gw.example/proxy/v1/", UnknownOperationClass.NO_RETRY)
    val methods =
        arrayOf("GET", "get", "GET", "GET", "DELETE", "POST", "POST", "GET", "GET", "patch", "query", "POST", "GET", "GET", "POST", "POST")
    val targets =
        arrayOf(
            "/v1/sandboxes/templates",
            "/v1/sandboxes/abc?x=1#y",
            "/v1/sandboxes/templates/logs",
            "/v1/files/a.json.json",
            "/v1/m/x.txt",
            "/v1/caf%c3%a9/items/",
            "https://h.example/v1/caf%E9/items",
            "/v1/order/p\uE000aq\uD83D\uDE00r",
            "sandboxes/abc/logs",
            "/v1/sandboxes/abc",
            "/nowhere/%F0%9F%98%80/x",
            "/proxy/v1/caf%C3%A9/items",
            "",
            "/v1/sandboxes//logs",
            "/v1/caf%C3",
            "/v1/caf%C3/items",
        )
    val expected = Array(targets.size) { table.classify(methods[it], targets[it]) }
    // Warm-up: the per-thread buffer, and whatever the JVM links on a first call.
    for (i in targets.indices) {
        proxy.classify(methods[i], targets[i])
    }
    val threads = ManagementFactory.getThreadMXBean() as com.sun.management.ThreadMXBean
    val thread = Thread.currentThread().id
    // The JVM itself sometimes allocates on the thread while it moves code between the interpreter
    // and the compilers (a few hundred bytes now and then, never per call), so the test takes the
    // least of several windows of one pass each: a classify that allocated would show in every one.
    // The windows come right after the warm-up, while the code runs interpreted or compiled by C1,
    // neither of which has the escape analysis that could hide an allocation.
    var same = true
    var allocated = Long.MAX_VALUE
    for (window in 0 until 11) {
        val before = threads.getThreadAllocatedBytes(thread)
        for (i in targets.indices) {
            same = same && table.classify(methods[i], targets[i]) === expected[i]
            proxy.classify(methods[i], targets[i])
        }
        allocated = minOf(allocated, threads.getThreadAllocatedBytes(thread) - before)
    }
    expect("classify hands out one instance per result", same, true)
    expect("classify allocates nothing", allocated, 0L)
}

private fun keyAndEventTests() {
    val keyed = op("POST", "/k", "k", ReplayClass.KEYED, "Idempotency-Key")
    expect("key", RetryRuntime.hasIdempotencyKey(keyed, listOf("idempotency-KEY" to " k1 ")), true)
    expect("blank value", RetryRuntime.hasIdempotencyKey(keyed, listOf("Idempotency-Key" to " \t")), false)
    expect("repeated name", RetryRuntime.hasIdempotencyKey(keyed, listOf("Idempotency-Key" to "", "Idempotency-Key" to "v")), true)
    expect("no header", RetryRuntime.hasIdempotencyKey(op("POST", "/n", "n"), listOf("Idempotency-Key" to "v")), false)
    expect("no operation", RetryRuntime.hasIdempotencyKey(null, listOf("Idempotency-Key" to "v")), false)
    expect("non-ASCII fold", RetryRuntime.hasIdempotencyKey(op("POST", "/s", "s", ReplayClass.KEYED, "s"), listOf("\u017F" to "v")), false)
    val policy = RetryPolicy(serverDirectiveHeaders = listOf("x-a", "X-B"))
    expect("directive header order", RetryRuntime.directiveHeader(policy, listOf("x-b" to "false", "X-A" to "true")), "true")
    expect("no directive header", RetryRuntime.directiveHeader(policy, listOf("x-c" to "true")), null)
    val granted = Decision(true, 250, DecisionReason.RETRYABLE_STATUS)
    val event = RetryEvent.of(Classification(keyed, ReplayClass.KEYED), "post", 0, granted)
    expect(
        "event",
        listOf(event.attempt, event.reason, event.delayMs, event.method, event.pathTemplate, event.operationId),
        listOf(1L, DecisionReason.RETRYABLE_STATUS, 250L, "POST", "/k", "k"),
    )
    expect("event: no attempt facts", listOf(event.status, event.failure, event.attemptDurationMs), listOf(null, null, 0L))
    expect("event: equal by value", event, RetryEvent.of(Classification(keyed, ReplayClass.KEYED), "post", 0, granted))
    val unknown = RetryEvent.of(Classification(null, ReplayClass.IDEMPOTENT), "get\u00e9", 2, granted, 503, null, 7)
    expect(
        "event without operation",
        listOf(unknown.attempt, unknown.method, unknown.pathTemplate, unknown.operationId, unknown.status, unknown.attemptDurationMs),
        listOf(3L, "GET\u00e9", null, null, 503, 7L),
    )
    expect(
        "event: attempt facts are part of equality",
        unknown == RetryEvent.of(Classification(null, ReplayClass.IDEMPOTENT), "get", 2, granted),
        false,
    )
}

/**
 * The public value types are no data classes: a `copy` or `componentN` in the API would break
 * every caller compiled against it as soon as a field is added. Their public methods say so.
 */
private fun valueTypeTests() {
    val types =
        listOf(
            RetryPolicy::class.java,
            Operation::class.java,
            SafeListEntry::class.java,
            Classification::class.java,
            Outcome.Status::class.java,
            DecisionInput::class.java,
            Decision::class.java,
            BudgetAcquisition::class.java,
            RetryEvent::class.java,
        )
    for (type in types) {
        val generated = type.methods.map { it.name }.filter { it == "copy" || it.startsWith("component") }
        expect("${type.simpleName}: no data-class members", generated, emptyList<String>())
    }
    val policy = RetryPolicy.builder().maxRetries(5).build()
    expect("policy builder", policy, RetryPolicy(maxRetries = 5))
    expect("policy builder: hash by value", policy.hashCode(), RetryPolicy(maxRetries = 5).hashCode())
    expect(
        "policy newBuilder",
        policy
            .newBuilder()
            .deadlineMs(10)
            .build()
            .deadlineMs,
        10L,
    )
    expect(
        "policy newBuilder keeps the rest",
        policy
            .newBuilder()
            .deadlineMs(10)
            .build()
            .maxRetries,
        5,
    )
    expect("policy toString", RetryPolicy().toString().startsWith("RetryPolicy(maxRetries=3, "), true)
}

/** A v3 input: a status or failure of [replayClass] after [retriesUsed] retries, at a neutral clock. */
private fun v3Input(
    replayClass: ReplayClass,
    outcome: Outcome,
    retriesUsed: Long = 0,
    budgetTokens: Long? = null,
    timedOut: Boolean = false,
    hasPrecondition: Boolean = false,
    resumable: Boolean = false,
    hasLastEventId: Boolean = false,
    streamRetry: String? = null,
    problemType: String? = null,
): DecisionInput =
    DecisionInput(
        replayClass,
        false,
        outcome,
        retriesUsed,
        0,
        0,
        0,
        0.5,
        budgetTokens,
        timedOut,
        hasPrecondition,
        resumable,
        hasLastEventId,
        streamRetry,
        problemType,
    )

/** A throttled retry: its own backoff base (B1-B5 from it) and budget kind (contract v3, T1, K2). */
private fun throttlingTests() {
    val policy =
        RetryPolicy
            .builder()
            .jitter(Jitter.NONE)
            .throttlingInitialBackoffMs(1_000)
            .budgetThrottlingCost(2)
            .build()
    val throttled = RetryRuntime.decide(policy, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(429), retriesUsed = 1, budgetTokens = 500))
    expect(
        "throttled 429",
        listOf(throttled.retry, throttled.throttled, throttled.reason),
        listOf(true, true, DecisionReason.REJECTED_STATUS),
    )
    expect("throttled 429: the backoff grows from the throttling base", throttled.delayMs, 2_000L)
    expect("throttled 429: the throttling cost", throttled.budgetTokens, 498L)
    val timedOut =
        RetryRuntime.decide(policy, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(429), budgetTokens = 500, timedOut = true))
    expect("throttled 429 after a timeout still pays the throttling cost", timedOut.budgetTokens, 498L)
    val failed = RetryRuntime.decide(policy, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(503), retriesUsed = 1, budgetTokens = 500))
    expect("503 is no throttling", listOf(failed.throttled, failed.delayMs, failed.budgetTokens), listOf(false, 1_000L, 495L))
    val decorrelated = policy.newBuilder().jitter(Jitter.DECORRELATED).build()
    expect(
        "decorrelated: the previous delay defaults to the throttling base",
        RetryRuntime.decide(decorrelated, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(429))).delayMs,
        2_000L,
    )
    expect(
        "throttling kind without a throttling cost pays the retry cost",
        RetryRuntime.budgetTryAcquire(RetryPolicy(), 500, BudgetKind.THROTTLING),
        BudgetAcquisition(true, 495),
    )
    expect("throttling kind", RetryRuntime.budgetTryAcquire(policy, 500, BudgetKind.THROTTLING), BudgetAcquisition(true, 498))
    expect("throttling kind parses", BudgetKind.parse("throttling"), BudgetKind.THROTTLING)
    // The defaults change nothing: a 429 is throttled, with v2's base and cost.
    val plain = RetryPolicy(jitter = Jitter.NONE)
    val v2 = RetryRuntime.decide(plain, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(429), budgetTokens = 500))
    expect("default policy: 429", listOf(v2.throttled, v2.delayMs, v2.budgetTokens), listOf(true, 500L, 495L))
    // The budget cell decides with every v3 input, the throttled kind included.
    val cell = RetryBudgetCell(policy)
    expect("cell: throttled", cell.decide(v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(429))).budgetTokens, 498L)
    val dropped = cell.decide(v3Input(ReplayClass.NON_REPLAYABLE, Outcome.Dropped, resumable = true, hasLastEventId = true))
    expect("cell: a resumable drop", dropped.reason, DecisionReason.STREAM_RESUME)
}

/** A committed stream that drops (contract v3, R5a, S9). */
private fun droppedStreamTests() {
    val policy = RetryPolicy(jitter = Jitter.NONE)
    val resumed =
        RetryRuntime.decide(
            policy,
            v3Input(ReplayClass.NON_REPLAYABLE, Outcome.Dropped, resumable = true, hasLastEventId = true, streamRetry = "300"),
        )
    expect(
        "resumed after its last event id",
        listOf(resumed.retry, resumed.reason, resumed.delayMs),
        listOf(true, DecisionReason.STREAM_RESUME, 300L),
    )
    expect(
        "no last event id: a non-replayable stream stops",
        RetryRuntime.decide(policy, v3Input(ReplayClass.NON_REPLAYABLE, Outcome.Dropped, resumable = true)).reason,
        DecisionReason.STREAM_NOT_RESUMABLE,
    )
    expect(
        "no last event id: an idempotent stream is replayed whole, after the backoff",
        RetryRuntime.decide(policy, v3Input(ReplayClass.IDEMPOTENT, Outcome.Dropped, resumable = true, streamRetry = "x")).delayMs,
        500L,
    )
    expect(
        "not resumable",
        RetryRuntime.decide(policy, v3Input(ReplayClass.IDEMPOTENT, Outcome.Dropped, hasLastEventId = true)).reason,
        DecisionReason.STREAM_NOT_RESUMABLE,
    )
    expect(
        "a drop ignores Retry-After: only the stream's retry field counts",
        RetryRuntime
            .decide(
                policy,
                v3Input(ReplayClass.IDEMPOTENT, Outcome.Dropped, resumable = true, hasLastEventId = true),
            ).delayMs,
        500L,
    )
    val overCap =
        RetryRuntime.decide(
            policy,
            v3Input(ReplayClass.IDEMPOTENT, Outcome.Dropped, resumable = true, hasLastEventId = true, streamRetry = "9".repeat(20)),
        )
    expect(
        "a huge retry field is over the cap, reported saturated",
        listOf(overCap.reason, overCap.serverDelayMs),
        listOf(DecisionReason.RETRY_AFTER_OVER_CAP, 9_007_199_254_740_991L),
    )
    val status = RetryRuntime.decide(policy, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(503), streamRetry = "7"))
    expect("a status ignores the stream's retry field", status.delayMs, 500L)
    val refused = RetryRuntime.decide(policy, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(503, "120")))
    expect("the refused server delay is reported", listOf(refused.retry, refused.serverDelayMs), listOf(false, 120_000L))
    expect("dropped parses", Outcome.failure("dropped"), Outcome.Dropped)
}

/** Preconditions and problem types (contract v3, H2, R6a, R6b, R9a, Q1-Q2) and the key format (F1). */
private fun preconditionAndProblemTests() {
    expect("If-Match with a tag", RetryRuntime.hasPrecondition(listOf("if-MATCH" to " \"v1\" ")), true)
    expect("If-Match: *", RetryRuntime.hasPrecondition(listOf("If-Match" to "*", "If-Match" to "")), false)
    expect("If-None-Match: *", RetryRuntime.hasPrecondition(listOf("If-None-Match" to "	*")), true)
    expect("If-None-Match with a tag", RetryRuntime.hasPrecondition(listOf("If-None-Match" to "\"v1\"")), false)
    expect("If-Unmodified-Since", RetryRuntime.hasPrecondition(listOf("If-Unmodified-Since" to "Sun, 06 Nov 1994 08:49:37 GMT")), false)
    val policy = RetryPolicy(jitter = Jitter.NONE)
    expect(
        "a precondition makes a non-replayable request replayable",
        RetryRuntime.decide(policy, v3Input(ReplayClass.NON_REPLAYABLE, Outcome.Transport, hasPrecondition = true)).reason,
        DecisionReason.TRANSPORT_FAILURE,
    )
    expect(
        "412 after a replay",
        RetryRuntime.decide(policy, v3Input(ReplayClass.NON_REPLAYABLE, Outcome.Status(412), 1, hasPrecondition = true)).reason,
        DecisionReason.PRECONDITION_FAILED_AFTER_REPLAY,
    )
    expect(
        "412 on the first attempt",
        RetryRuntime.decide(policy, v3Input(ReplayClass.NON_REPLAYABLE, Outcome.Status(412), hasPrecondition = true)).reason,
        DecisionReason.STATUS_NOT_RETRYABLE,
    )
    val quota = RetryPolicy.PROBLEM_TYPE_QUOTA_EXCEEDED
    expect(
        "a quota problem stops a 429",
        RetryRuntime.decide(policy, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(429), problemType = quota)).reason,
        DecisionReason.PROBLEM_TYPE_STOP,
    )
    val retrying = policy.newBuilder().retryProblemTypes(listOf("urn:busy")).build()
    expect(
        "a retry problem type, replayable",
        RetryRuntime.decide(retrying, v3Input(ReplayClass.IDEMPOTENT, Outcome.Status(400), problemType = "urn:busy")).reason,
        DecisionReason.PROBLEM_TYPE_RETRY,
    )
    expect(
        "a retry problem type, not replayable",
        RetryRuntime.decide(retrying, v3Input(ReplayClass.NON_REPLAYABLE, Outcome.Status(400), problemType = "urn:busy")).reason,
        DecisionReason.STATUS_NOT_RETRYABLE,
    )
    val body = "{\"type\": \"urn:a\\u00e9\", \"detail\": [1, {\"type\": 2}]}".toByteArray(Charsets.UTF_8)
    expect("problem type", RetryRuntime.problemTypeOf("Application/Problem+JSON; charset=utf-8", body, true), "urn:a\u00e9")
    expect("problem type: another media type", RetryRuntime.problemTypeOf("application/json", body, true), null)
    expect("problem type: a prefix", RetryRuntime.problemTypeOf("application/problem+json", body, false), null)
    expect(
        "problem type: repeated",
        RetryRuntime.problemTypeOf("application/problem+json", "{\"type\":\"a\",\"type\":\"a\"}".toByteArray(), true),
        null,
    )
    expect(
        "problem type: an escaped lone surrogate",
        RetryRuntime.problemTypeOf("application/problem+json", "{\"type\":\"\\ud800\"}".toByteArray(), true),
        null,
    )
    expect(
        "key format uuid",
        RetryRuntime.idempotencyKeyValue(IdempotencyKeyFormat.UUID, "8e03978e-0000-4000-8000-000000000000").length,
        36,
    )
    expect("key format sf-string", RetryRuntime.idempotencyKeyValue(IdempotencyKeyFormat.SF_STRING, "u"), "\"u\"")
}

/** The event scanner fed in every piece size gives what it gives fed whole (contract v3, E2). */
private fun eventScannerTests() {
    val streams =
        listOf(
            "\uFEFFid: 1\r\ndata: a\r\n\r\nid: 2\rretry: 250\r\rdata: b\nid: 3\n",
            ": comment\nid\nretry: 12x\n\nid: \u00e9\u0000\ndata: c\n\n\r",
            "retry:40\ndata: d\n\nid: 9\ndata: cut",
        )
    val expected =
        listOf(
            Triple(39L, "2", "250"),
            Triple(42L, "", null),
            Triple(18L, "", "40"),
        )
    for ((index, text) in streams.withIndex()) {
        val bytes = text.toByteArray(Charsets.UTF_8)
        val whole = EventStreamScanner()
        whole.feed(bytes)
        val found = Triple(whole.completeBytes, whole.lastEventId, whole.retry)
        expect("stream $index fed whole", found, expected[index])
        for (piece in 1..bytes.size) {
            val scanner = EventStreamScanner()
            var at = 0
            while (at < bytes.size) {
                val length = minOf(piece, bytes.size - at)
                scanner.feed(bytes, at, length)
                at += length
            }
            expect("stream $index in pieces of $piece", Triple(scanner.completeBytes, scanner.lastEventId, scanner.retry), found)
        }
    }
    val bom = EventStreamScanner()
    bom.feed(byteArrayOf(0xEF.toByte(), 0xBB.toByte()))
    expect("a partial byte order mark", bom.completeBytes, 0L)
    bom.feed(byteArrayOf(0xBF.toByte()))
    expect("a byte order mark is complete before the first event", bom.completeBytes, 3L)
}

/** Contract C3 as v3 settles it, and the stream attributes of a match (A1-A2). */
private fun unknownClassAndStreamTests() {
    val stream = Operation("GET", "/logs", "/logs", "logs", ReplayClass.IDEMPOTENT, null, true, true)
    val table = OperationTable("", listOf(stream), UnknownOperationClass.NO_RETRY)
    expect("classify: the table's unknown class", table.classify("GET", "/other").replayClass, ReplayClass.NO_RETRY)
    expect("classifier: the table's unknown class", table.classifier(null).classify("GET", "/other").replayClass, ReplayClass.NO_RETRY)
    expect(
        "classifier: another unknown class",
        table.classifier(null, UnknownOperationClass.METHOD_DEFAULT).classify("GET", "/other").replayClass,
        ReplayClass.IDEMPOTENT,
    )
    expect(
        "two-argument table: the method default",
        OperationTable("", listOf(stream)).classify("GET", "/x").replayClass,
        ReplayClass.IDEMPOTENT,
    )
    val match = table.classify("GET", "/logs")
    expect("a stream's attributes", listOf(match.streaming, match.resumable), listOf(true, true))
    val none = table.classify("GET", "/other")
    expect("no operation: no stream", listOf(none.streaming, none.resumable), listOf(false, false))
    expect("six-argument operation does not stream", op("GET", "/x", "x").streaming, false)
}

public fun main() {
    valueTypeTests()
    throttlingTests()
    droppedStreamTests()
    preconditionAndProblemTests()
    eventScannerTests()
    unknownClassAndStreamTests()
    matcherTests()
    patternTests()
    lazyPatternTests()
    immutabilityTests()
    serverDelayTests()
    backoffTests()
    decideTests()
    validationTests()
    decideV2Tests()
    budgetTests()
    classifierTests()
    keyAndEventTests()
    allocationTests()
    if (failures.isNotEmpty()) {
        failures.forEach { System.err.println("FAIL $it") }
        System.err.println("${failures.size} of $checks checks failed")
        exitProcess(1)
    }
    println("kotlin runtime: $checks checks pass")
}
