// Unit tests of RetryRuntime.kt, compiled with it in one kotlinc call and run with `java`
// (see README.md). No test library: `main` runs every test, prints failures and exits non-zero.

package retrygen.generated

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
    expect("root pattern", pattern("root"), "^/$")
    expect("parameter pattern", pattern("sandboxLogs"), "^/sandboxes/[^/]+/logs/?$")
    expect("mixed pattern, escaped dot", pattern("fileWithExt"), "^/files/[^/]+\\.[^/]+/?$")
    expect("literal as written, trailing slash dropped", pattern("postCafe"), "^/caf%C3%A9/items/?$")
    expect(
        "pattern from the route",
        table.operations
            .last()
            .pattern.pattern,
        "^/oauth/token/?$",
    )
    expect(
        "escapes",
        RetryRuntime.routePattern("/a.b+c*d?e(f)g|h[i]j^k\$l\\m/{p}"),
        "^/a\\.b\\+c\\*d\\?e\\(f\\)g\\|h\\[i\\]j\\^k\\\$l\\\\m/[^/]+/?$",
    )
    expect("non-replayable list", table.nonReplayableOperations.map { it.first }, listOf("POST", "POST"))
    expect("listed", table.isNonReplayable("POST", "/caf%C3%A9/items/"), true)
    expect("method compared exactly", table.isNonReplayable("post", "/caf%C3%A9/items"), false)
    expect("whole path", table.isNonReplayable("POST", "/caf%C3%A9/items/x"), false)
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
    expectThrows("non-replayable list") { (table.nonReplayableOperations as MutableList<Pair<String, Regex>>).clear() }
    expectThrows("idempotent methods") { (RetryRuntime.IDEMPOTENT_METHODS as MutableSet<String>).add("POST") }
    expectThrows("contract statuses") { (RetryPolicy().retryableStatuses as MutableSet<Int>).add(404) }
    expectThrows("rejected statuses") { (RetryPolicy.CONTRACT_REJECTED_STATUSES as MutableSet<Int>).clear() }
    expectThrows("status sets") { (RetryRuntime.statusSet(500) as MutableSet<Int>).add(404) }
    expect("status set order", RetryRuntime.statusSet(503, 500, 503).toList(), listOf(503, 500))
    val javaConstructors =
        RetryPolicy::class.java.constructors
            .map { it.parameterCount }
            .toSet()
    expect("@JvmOverloads constructors", (0..9).all { it in javaConstructors }, true)
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
        retriesUsed: Int,
        random: Double = 0.5,
        previousDelayMs: Long = 0,
    ) = RetryRuntime.backoffMs(RetryPolicy(maxRetries = 10, jitter = jitter), retriesUsed, previousDelayMs, random)
    expect("full", (0..3).map { backoff(Jitter.FULL, it) }, listOf(250L, 500L, 1000L, 2000L))
    expect("equal", (0..2).map { backoff(Jitter.EQUAL, it) }, listOf(375L, 750L, 1500L))
    expect("none", (0..2).map { backoff(Jitter.NONE, it) }, listOf(500L, 1000L, 2000L))
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
        retriesUsed: Int = 0,
        hasKey: Boolean = false,
        policy: RetryPolicy = RetryPolicy(),
        elapsedMs: Long = 0,
    ) = RetryRuntime.decide(policy, DecisionInput(replayClass, hasKey, outcome, retriesUsed, elapsedMs, 0, 784_111_777_000L, 0.5))
    val n = ReplayClass.NON_REPLAYABLE
    val i = ReplayClass.IDEMPOTENT
    expect("503, non-replayable", decide(n, Outcome.Status(503)), Decision(false, 0, DecisionReason.NOT_REPLAYABLE))
    expect("429, non-replayable", decide(n, Outcome.Status(429)), Decision(true, 250, DecisionReason.REJECTED_STATUS))
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
    expect(
        "deadline",
        decide(i, Outcome.Status(503), policy = policy.copy(deadlineMs = 1000), elapsedMs = 900).reason,
        DecisionReason.DEADLINE,
    )
    expect("wire names", DecisionReason.RETRY_AFTER_OVER_CAP.wireName, "retry_after_over_cap")
}

public fun main() {
    matcherTests()
    patternTests()
    lazyPatternTests()
    immutabilityTests()
    serverDelayTests()
    backoffTests()
    decideTests()
    if (failures.isNotEmpty()) {
        failures.forEach { System.err.println("FAIL $it") }
        System.err.println("${failures.size} of $checks checks failed")
        exitProcess(1)
    }
    println("kotlin runtime: $checks checks pass")
}
