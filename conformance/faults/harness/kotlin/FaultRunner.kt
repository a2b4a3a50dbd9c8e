// The Kotlin runner of the fault matrix (conformance/faults/README.md): a real OkHttp client with
// the generated module's RetryInterceptor installed, one fresh client per scenario, against the
// matrix's server. Built by `cargo xtask faults` with the module rendered from
// conformance/faults/spec.yaml (package retrygen.generated, object RetryPolicies). Kotlin stdlib,
// OkHttp and Okio only; the scenario file is read with the small JSON reader at the end.

import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody
import okhttp3.RequestBody.Companion.toRequestBody
import okio.BufferedSink
import retrygen.generated.RetryEvent
import retrygen.generated.RetryFinish
import retrygen.generated.RetryInterceptor
import retrygen.generated.RetryPolicies
import java.io.File
import java.io.IOException
import java.lang.management.ManagementFactory
import java.time.Duration
import java.util.Collections
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import kotlin.system.exitProcess

private const val WARMUP_REQUESTS = 200

private class Targets(
    val server: String,
    val closedPort: String,
    val unresolvable: String,
    val run: String,
)

public fun main(args: Array<String>) {
    if (args.size != 1) {
        System.err.println("usage: FaultRunnerKt SCENARIOS.json")
        exitProcess(2)
    }
    val file = Json(File(args[0]).readText()).parse().asObject()
    val basePath = System.getenv("RETRYGEN_FAULT_BASE_PATH") ?: (file["base_path"] as String)
    val targets =
        Targets(
            env("RETRYGEN_FAULT_URL") + basePath,
            env("RETRYGEN_FAULT_CLOSED_URL") + basePath,
            env("RETRYGEN_FAULT_UNRESOLVABLE_URL") + basePath,
            env("RETRYGEN_FAULT_RUN"),
        )
    val bench = System.getenv("RETRYGEN_FAULT_BENCH")
    if (bench != null) {
        println(bench(targets.server, bench.toInt()))
        return
    }
    for (scenario in file["scenarios"] as List<*>) {
        println(runScenario(scenario.asObject(), targets))
        System.out.flush()
    }
}

private fun env(name: String): String = System.getenv(name) ?: error("$name is not set")

@Suppress("UNCHECKED_CAST")
private fun Any?.asObject(): Map<String, Any?> = this as Map<String, Any?>

/** A body OkHttp can write only once, of unknown length (sent chunked). */
private class OneShotBody(
    private val text: String,
) : RequestBody() {
    override fun contentType(): okhttp3.MediaType? = null

    override fun contentLength(): Long = -1

    override fun isOneShot(): Boolean = true

    override fun writeTo(sink: BufferedSink) {
        sink.writeUtf8(text)
    }
}

private fun runScenario(
    scenario: Map<String, Any?>,
    targets: Targets,
): String {
    val id = scenario["id"] as String
    val base =
        when (val target = scenario["target"] as String? ?: "server") {
            "server" -> targets.server
            "closed_port" -> targets.closedPort
            "unresolvable" -> targets.unresolvable
            else -> error("unknown target $target")
        }
    val events: MutableList<RetryEvent> = Collections.synchronizedList(ArrayList())
    val finishes: MutableList<RetryFinish> = Collections.synchronizedList(ArrayList())
    val retries =
        RetryInterceptor(
            RetryPolicies.TABLE,
            RetryPolicies.DEFAULT_POLICY,
            base,
            { events += it },
            { finishes += it },
            scenario["mint_keys"] as Boolean? ?: true,
            (scenario["attempt_timeout_ms"] as Long?)?.let(Duration::ofMillis),
        )
    val client = retries.install(OkHttpClient.Builder()).build()
    val url = base + scenario["path"] as String
    val method = scenario["method"] as String
    try {
        if (scenario["warm"] == true) {
            val warmup =
                Request
                    .Builder()
                    .url(url)
                    .header("x-fault-run", targets.run)
                    .header("x-fault-scenario", id)
                    .header("x-fault-warmup", "1")
                    .build()
            client.newCall(warmup).execute().use { it.body?.string() }
            events.clear()
            finishes.clear()
        }
        val body = scenario["body"]?.asObject()
        val text = body?.get("text") as String?
        val requestBody =
            when {
                text == null && method in listOf("POST", "PUT", "PATCH") -> ByteArray(0).toRequestBody()
                text == null -> null
                body["kind"] == "stream" -> OneShotBody(text)
                else -> text.toByteArray().toRequestBody()
            }
        val request = Request.Builder().url(url).method(method, requestBody)
        (scenario["headers"]?.asObject() ?: emptyMap()).forEach { (name, value) -> request.addHeader(name, value as String) }
        request.header("x-fault-run", targets.run).header("x-fault-scenario", id)
        return send(client, request.build(), scenario, id, events, finishes)
    } finally {
        client.dispatcher.executorService.shutdown()
        client.connectionPool.evictAll()
    }
}

private fun send(
    client: OkHttpClient,
    request: Request,
    scenario: Map<String, Any?>,
    id: String,
    events: List<RetryEvent>,
    finishes: List<RetryFinish>,
): String {
    val call = client.newCall(request)
    val canceller = Executors.newSingleThreadScheduledExecutor()
    (scenario["abort_after_ms"] as Long?)?.let { canceller.schedule({ call.cancel() }, it, TimeUnit.MILLISECONDS) }
    var status: Int? = null
    var text: String? = null
    var bodyError = false
    var failure: Exception? = null
    val started = System.nanoTime()
    try {
        call.execute().use { response ->
            status = response.code
            try {
                text = response.body?.string() ?: ""
            } catch (e: IOException) {
                bodyError = true
            }
        }
    } catch (e: IOException) {
        failure = e
    } finally {
        canceller.shutdownNow()
    }
    val elapsedMs = (System.nanoTime() - started) / 1_000_000
    val finish = finishes.singleOrNull()
    val error =
        when {
            failure == null && (finish == null || finish.outcome == "status") -> null
            failure != null && finish != null && finish.outcome != "status" -> finish.outcome
            else -> "mismatch"
        }
    val out = StringBuilder("{")
    field(out, "id", id)
    field(out, "status", status)
    field(out, "error", error)
    field(out, "body", text)
    field(out, "body_error", bodyError)
    out.append("\"events\":[")
    events.forEachIndexed { i, event ->
        if (i > 0) out.append(',')
        out.append('{')
        field(out, "attempt", event.attempt)
        field(out, "reason", event.reason.wireName)
        field(out, "delay_ms", event.delayMs)
        operation(out, event.method, event.pathTemplate, event.operationId)
        out.append('}')
    }
    out.append("],\"finish\":")
    if (finish == null || finishes.size != 1) {
        out.append("null,")
    } else {
        out.append('{')
        field(out, "attempts", finish.attempts)
        field(out, "reason", finish.reason)
        field(out, "outcome", finish.outcome)
        field(out, "status", finish.status)
        field(out, "timed_out", finish.timedOut)
        operation(out, finish.method, finish.pathTemplate, finish.operationId)
        out.append("},")
    }
    field(out, "error_type", failure?.javaClass?.name)
    out.append("\"elapsed_ms\":").append(elapsedMs).append('}')
    return out.toString()
}

private fun operation(
    out: StringBuilder,
    method: String,
    pathTemplate: String?,
    operationId: String?,
) {
    field(out, "method", method)
    field(out, "path_template", pathTemplate)
    out.append("\"operation_id\":")
    value(out, operationId)
}

/** `"name":value,` */
private fun field(
    out: StringBuilder,
    name: String,
    value: Any?,
) {
    out.append('"').append(name).append("\":")
    value(out, value)
    out.append(',')
}

private fun value(
    out: StringBuilder,
    value: Any?,
) {
    when (value) {
        null -> {
            out.append("null")
        }

        is String -> {
            out.append('"')
            for (c in value) {
                when {
                    c == '"' -> out.append("\\\"")
                    c == '\\' -> out.append("\\\\")
                    c < ' ' || c.code > 0x7e -> out.append(String.format("\\u%04x", c.code))
                    else -> out.append(c)
                }
            }
            out.append('"')
        }

        else -> {
            out.append(value.toString())
        }
    }
}

/**
 * The overhead mode: a bare client and one with the adapter (defaults, no callbacks), each
 * warmed up, then [rounds] rounds of one request each in alternating order.
 */
private fun bench(
    server: String,
    rounds: Int,
): String {
    val bare = OkHttpClient.Builder().build()
    val adapted = RetryInterceptor(RetryPolicies.TABLE, RetryPolicies.DEFAULT_POLICY).install(OkHttpClient.Builder()).build()
    val clients = listOf(bare, adapted)
    val request =
        Request
            .Builder()
            .url("$server/health")
            .header("x-fault-warmup", "1")
            .build()

    fun get(client: OkHttpClient) {
        client.newCall(request).execute().use { response ->
            check(response.code == 200) { "warm-up request answered ${response.code}" }
            response.body?.string()
        }
    }
    repeat(WARMUP_REQUESTS) { clients.forEach(::get) }
    val times = listOf(LongArray(rounds), LongArray(rounds))
    val allocated = LongArray(2)
    val threads = ManagementFactory.getThreadMXBean() as com.sun.management.ThreadMXBean
    val thread = Thread.currentThread().id
    for (i in 0 until rounds) {
        for (k in if (i % 2 == 0) intArrayOf(0, 1) else intArrayOf(1, 0)) {
            val bytes = threads.getThreadAllocatedBytes(thread)
            val started = System.nanoTime()
            get(clients[k])
            times[k][i] = System.nanoTime() - started
            allocated[k] += threads.getThreadAllocatedBytes(thread) - bytes
        }
    }
    val (bareUs, adapterUs) = times.map { median(it) / 1000.0 }
    clients.forEach {
        it.dispatcher.executorService.shutdown()
        it.connectionPool.evictAll()
    }
    return String.format(
        java.util.Locale.ROOT,
        "{\"bench\": {\"requests\": %d, \"bare_us\": %.2f, \"adapter_us\": %.2f, \"overhead_us\": %.2f, " +
            "\"overhead_pct\": %.2f, \"allocated_bytes_per_request\": %d, " +
            "\"allocation_counter\": \"ThreadMXBean.getThreadAllocatedBytes (calling thread)\"}}",
        rounds,
        bareUs,
        adapterUs,
        adapterUs - bareUs,
        (adapterUs - bareUs) / bareUs * 100,
        (allocated[1] - allocated[0]) / rounds,
    )
}

private fun median(values: LongArray): Double {
    val sorted = values.sorted()
    val n = sorted.size
    return if (n % 2 == 1) sorted[n / 2].toDouble() else (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
}

/** A strict reader of the JSON the scenario file holds: objects, arrays, strings, integers, booleans, null. */
private class Json(
    private val text: String,
) {
    private var at = 0

    fun parse(): Any? {
        val value = value()
        space()
        check(at == text.length) { "trailing characters at $at" }
        return value
    }

    private fun space() {
        while (at < text.length && text[at] in " \t\r\n") {
            at++
        }
    }

    private fun value(): Any? {
        space()
        return when (val c = text[at]) {
            '{' -> obj()
            '[' -> array()
            '"' -> string()
            't' -> literal("true", true)
            'f' -> literal("false", false)
            'n' -> literal("null", null)
            else -> if (c == '-' || c.isDigit()) number() else error("unexpected '$c' at $at")
        }
    }

    private fun literal(
        word: String,
        value: Any?,
    ): Any? {
        check(text.startsWith(word, at)) { "bad literal at $at" }
        at += word.length
        return value
    }

    private fun number(): Any {
        val start = at
        while (at < text.length &&
            (text[at] == '-' || text[at] == '+' || text[at] == '.' || text[at] == 'e' || text[at] == 'E' || text[at].isDigit())
        ) {
            at++
        }
        val s = text.substring(start, at)
        return s.toLongOrNull() ?: s.toDouble()
    }

    private fun string(): String {
        at++
        val out = StringBuilder()
        while (true) {
            val c = text[at++]
            when (c) {
                '"' -> {
                    return out.toString()
                }

                '\\' -> {
                    when (val e = text[at++]) {
                        'n' -> {
                            out.append('\n')
                        }

                        't' -> {
                            out.append('\t')
                        }

                        'r' -> {
                            out.append('\r')
                        }

                        'b' -> {
                            out.append('\b')
                        }

                        'f' -> {
                            out.append('\u000c')
                        }

                        'u' -> {
                            out.append(text.substring(at, at + 4).toInt(16).toChar())
                            at += 4
                        }

                        else -> {
                            out.append(e)
                        }
                    }
                }

                else -> {
                    out.append(c)
                }
            }
        }
    }

    private fun array(): List<Any?> {
        at++
        val out = ArrayList<Any?>()
        space()
        if (text[at] == ']') {
            at++
            return out
        }
        while (true) {
            out += value()
            space()
            when (text[at++]) {
                ',' -> continue
                ']' -> return out
                else -> error("expected , or ] at ${at - 1}")
            }
        }
    }

    private fun obj(): Map<String, Any?> {
        at++
        val out = LinkedHashMap<String, Any?>()
        space()
        if (text[at] == '}') {
            at++
            return out
        }
        while (true) {
            space()
            val key = string()
            space()
            check(text[at++] == ':') { "expected : at ${at - 1}" }
            out[key] = value()
            space()
            when (text[at++]) {
                ',' -> continue
                '}' -> return out
                else -> error("expected , or } at ${at - 1}")
            }
        }
    }
}
