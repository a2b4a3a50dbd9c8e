// The Kotlin runner of the fault matrix (conformance/faults/README.md): a real OkHttp client with
// the generated module's RetryInterceptor installed, one fresh client per scenario, against the
// matrix's server. Built by `cargo xtask faults` with the module rendered from
// conformance/faults/spec.yaml (package retrygen.generated, object RetryPolicies), once against
// OkHttp 4.12 (run `kotlin`) and once against OkHttp 5 (run `kotlin-okhttp5`): the same source.
// Kotlin stdlib, OkHttp and Okio (and resilience4j-retry, the overhead mode's peer); the scenario
// file is read with the small JSON reader at the end. With RETRYGEN_FAULT_SOAK set, the soak (one client, the plan's requests); with
// RETRYGEN_FAULT_BENCH=N, the overhead mode instead.
//
// Protocols (RETRYGEN_FAULT_PROTOCOL): http1 (HTTP/1.1 only), h2c (Protocol.H2_PRIOR_KNOWLEDGE),
// http1-tls (HTTP/1.1 only over TLS), h2 (HTTP/2 and HTTP/1.1 offered by ALPN); over TLS the client
// trusts exactly the CA in RETRYGEN_FAULT_CA_FILE.

import io.github.resilience4j.retry.Retry
import io.github.resilience4j.retry.RetryConfig
import okhttp3.OkHttpClient
import okhttp3.Protocol
import okhttp3.Request
import okhttp3.RequestBody
import okhttp3.RequestBody.Companion.toRequestBody
import okhttp3.Response
import okhttp3.ResponseBody
import okio.Buffer
import okio.BufferedSink
import retrygen.generated.IdempotencyKeyFormat
import retrygen.generated.RetryEvent
import retrygen.generated.RetryFinish
import retrygen.generated.RetryInterceptor
import retrygen.generated.RetryOverrides
import retrygen.generated.RetryPolicies
import retrygen.generated.RetryPolicy
import java.io.File
import java.io.IOException
import java.lang.management.ManagementFactory
import java.security.KeyStore
import java.security.cert.CertificateFactory
import java.time.Duration
import java.util.Collections
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import javax.net.ssl.SSLContext
import javax.net.ssl.TrustManagerFactory
import javax.net.ssl.X509TrustManager
import kotlin.system.exitProcess

// The overhead mode's warm-up per client: enough for the JIT to compile the adapter's path (C2
// after some thousand calls of a method), so that the medians are a running service's, not the
// interpreter's; with 200 the adapter's figure was mostly its code still interpreted.
private const val WARMUP_REQUESTS = 10_000

private class Targets(
    val urls: Map<String, String?>,
    val basePath: String,
    val run: String,
    val protocol: String,
    val caFile: String?,
) {
    /** The URL of the target [name] (its variable), with the base path. */
    fun base(name: String): String = (urls[name] ?: error("target $name: its variable is not set")) + basePath
}

public fun main(args: Array<String>) {
    if (args.size != 1) {
        System.err.println("usage: FaultRunnerKt SCENARIOS.json")
        exitProcess(2)
    }
    val file = Json(File(args[0]).readText()).parse().asObject()
    val soak = !System.getenv("RETRYGEN_FAULT_SOAK").isNullOrEmpty()
    val basePath = System.getenv("RETRYGEN_FAULT_BASE_PATH") ?: (if (soak) "/v1" else file["base_path"] as String)
    val protocol = System.getenv("RETRYGEN_FAULT_PROTOCOL") ?: "http1"
    check(protocol in listOf("http1", "h2c", "http1-tls", "h2")) { "unknown protocol $protocol" }
    val targets =
        Targets(
            mapOf(
                "server" to env("RETRYGEN_FAULT_URL"),
                "closed_port" to env("RETRYGEN_FAULT_CLOSED_URL"),
                "unresolvable" to env("RETRYGEN_FAULT_UNRESOLVABLE_URL"),
                "other_origin" to System.getenv("RETRYGEN_FAULT_OTHER_ORIGIN_URL"),
                "untrusted_tls" to System.getenv("RETRYGEN_FAULT_UNTRUSTED_URL"),
                "tls_mismatch" to System.getenv("RETRYGEN_FAULT_TLS_MISMATCH_URL"),
            ),
            basePath,
            env("RETRYGEN_FAULT_RUN"),
            protocol,
            System.getenv("RETRYGEN_FAULT_CA_FILE"),
        )
    val bench = System.getenv("RETRYGEN_FAULT_BENCH")
    if (bench != null) {
        println(bench(targets, bench.toInt()))
        return
    }
    if (soak) {
        soak(file, targets)
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

/** A builder speaking the run's protocol; over TLS it trusts exactly the CA file's certificates. */
private fun builder(targets: Targets): OkHttpClient.Builder {
    val builder = OkHttpClient.Builder()
    when (targets.protocol) {
        "http1", "http1-tls" -> builder.protocols(listOf(Protocol.HTTP_1_1))
        "h2c" -> builder.protocols(listOf(Protocol.H2_PRIOR_KNOWLEDGE))
        "h2" -> builder.protocols(listOf(Protocol.HTTP_2, Protocol.HTTP_1_1))
    }
    if (targets.protocol == "http1-tls" || targets.protocol == "h2") {
        val ca = checkNotNull(targets.caFile) { "RETRYGEN_FAULT_CA_FILE is not set" }
        val keys = KeyStore.getInstance(KeyStore.getDefaultType())
        keys.load(null, null)
        File(ca).inputStream().use { input ->
            CertificateFactory.getInstance("X.509").generateCertificates(input).forEachIndexed { i, cert ->
                keys.setCertificateEntry("ca-$i", cert)
            }
        }
        val factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm())
        factory.init(keys)
        val trust = factory.trustManagers.filterIsInstance<X509TrustManager>().single()
        val tls = SSLContext.getInstance("TLS")
        tls.init(null, arrayOf(trust), null)
        builder.sslSocketFactory(tls.socketFactory, trust)
    }
    return builder
}

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

/** A client with the adapter installed, recording the events of the request in flight. */
private class Recorder(
    targets: Targets,
    base: String,
    mintKeys: Boolean,
    attemptTimeoutMs: Long?,
    attemptHeader: String? = null,
    readBodyMaxBytes: Long = 0,
    policy: RetryPolicy = RetryPolicies.DEFAULT_POLICY,
) {
    val events: MutableList<RetryEvent> = Collections.synchronizedList(ArrayList())
    val finishes: MutableList<RetryFinish> = Collections.synchronizedList(ArrayList())
    val client: OkHttpClient =
        RetryInterceptor
            .builder(RetryPolicies.TABLE, policy)
            .baseUrl(base)
            .onRetry { events += it }
            .onFinish { finishes += it }
            .mintIdempotencyKeys(mintKeys)
            .attemptTimeout(attemptTimeoutMs?.let(Duration::ofMillis))
            .attemptHeader(attemptHeader)
            .readBodyMaxBytes(readBodyMaxBytes)
            .build()
            .install(builder(targets))
            .build()

    fun close() {
        client.dispatcher.executorService.shutdown()
        client.connectionPool.evictAll()
    }
}

/** Reads [response]'s whole body (nullable in OkHttp 4, not in 5: this compiles on both). */
private fun readBody(response: Response): String {
    val body: ResponseBody? = response.body
    return body?.string() ?: ""
}

/**
 * Reads [response]'s body as it comes until the text read holds [events] complete events (each
 * ended by a blank line, "\n\n" in the matrix's streams), then closes the body, as a caller that
 * stops listening does (contract v3 X4): the text read, exactly.
 */
private fun readEvents(
    response: Response,
    events: Int,
): String {
    // Nullable in OkHttp 4, not in 5: this compiles on both.
    val nullable: ResponseBody? = response.body
    val body = nullable ?: return ""
    val source = body.source()
    val read = Buffer()
    var text = ""
    while (eventEnds(text) < events && source.read(read, READ_CHUNK) != -1L) {
        text = read.snapshot().utf8()
    }
    body.close()
    return text
}

/** How many times a blank line ("\n\n") ends an event in [text]. */
private fun eventEnds(text: String): Int {
    var count = 0
    var at = text.indexOf("\n\n")
    while (at >= 0) {
        count++
        at = text.indexOf("\n\n", at + 2)
    }
    return count
}

private const val READ_CHUNK = 8192L

private fun warmUp(
    recorder: Recorder,
    url: String,
    close: Boolean,
    id: String,
    targets: Targets,
) {
    val warmup =
        Request
            .Builder()
            .url(url)
            .header("x-fault-run", targets.run)
            .header("x-fault-scenario", id)
            .header("x-fault-warmup", if (close) "close" else "1")
            .build()
    recorder.client
        .newCall(warmup)
        .execute()
        .use { readBody(it) }
}

private fun runScenario(
    scenario: Map<String, Any?>,
    targets: Targets,
): String {
    val id = scenario["id"] as String
    val kind = scenario["target"] as String? ?: "server"
    val base = targets.base(if (kind == "other_origin") "server" else kind)
    val url = targets.base(kind) + scenario["path"] as String
    val recorder =
        Recorder(
            targets,
            base,
            scenario["mint_keys"] as Boolean? ?: true,
            scenario["attempt_timeout_ms"] as Long?,
            scenario["attempt_header"] as String?,
            scenario["read_body_max_bytes"] as Long? ?: 0,
            scenarioPolicy(scenario["policy"]?.asObject()),
        )
    try {
        if (scenario["warm"] == true) {
            warmUp(recorder, "$base/health", scenario["warm_close"] == true, id, targets)
            (scenario["warm_pause_ms"] as Long?)?.let(Thread::sleep)
        }
        return request(scenario, url, recorder, targets)
    } finally {
        recorder.close()
    }
}

/** The module's default policy with the keys a scenario's `policy` gives (contract v3) replaced. */
private fun scenarioPolicy(given: Map<String, Any?>?): RetryPolicy {
    if (given == null) {
        return RetryPolicies.DEFAULT_POLICY
    }
    val builder = RetryPolicies.DEFAULT_POLICY.newBuilder()
    for ((key, value) in given) {
        when (key) {
            "idempotency_key_format" -> builder.idempotencyKeyFormat(IdempotencyKeyFormat.parse(value as String))
            else -> error("scenario policy key $key: not supported by this runner")
        }
    }
    return builder.build()
}

/** Sends one request of a scenario or of the soak and returns its line. */
private fun request(
    scenario: Map<String, Any?>,
    url: String,
    recorder: Recorder,
    targets: Targets,
): String {
    val id = scenario["id"] as String
    val method = scenario["method"] as String
    recorder.events.clear()
    recorder.finishes.clear()
    val body = scenario["body"]?.asObject()
    val text = body?.get("text") as String?
    val requestBody =
        when {
            text == null && method in listOf("POST", "PUT", "PATCH") -> ByteArray(0).toRequestBody()
            text == null -> null
            body["kind"] == "stream" -> OneShotBody(text)
            else -> text.toByteArray().toRequestBody()
        }
    val builder = Request.Builder().url(url).method(method, requestBody)
    (scenario["headers"]?.asObject() ?: emptyMap()).forEach { (name, value) -> builder.addHeader(name, value as String) }
    builder.header("x-fault-run", targets.run).header("x-fault-scenario", id)
    // [P1] The overrides as the request's tag, each only when given.
    scenario["overrides"]?.asObject()?.let { given ->
        val overrides = RetryOverrides.builder()
        (given["max_retries"] as Long?)?.let { overrides.maxRetries(it.toInt()) }
        (given["attempt_timeout_ms"] as Long?)?.let { overrides.attemptTimeout(Duration.ofMillis(it)) }
        (given["read_body_max_bytes"] as Long?)?.let { overrides.readBodyMaxBytes(it) }
        builder.tag(RetryOverrides::class.java, overrides.build())
    }
    // [contract X4] a caller that closes a stream while reading it, after this many events.
    val closeAfterEvents = (scenario["close_after_events"] as Long?)?.toInt()
    val call = recorder.client.newCall(builder.build())
    val canceller = Executors.newSingleThreadScheduledExecutor()
    (scenario["abort_after_ms"] as Long?)?.let { canceller.schedule({ call.cancel() }, it, TimeUnit.MILLISECONDS) }
    var status: Int? = null
    var read: String? = null
    var bodyError = false
    var failure: Exception? = null
    var fromResult: RetryFinish? = null
    val started = System.nanoTime()
    try {
        val response = call.execute()
        response.use {
            status = it.code
            try {
                read = if (closeAfterEvents != null) readEvents(it, closeAfterEvents) else readBody(it)
            } catch (e: IOException) {
                bodyError = true
            }
        }
        // After the body: a resumable stream's finish comes when its stream ends (contract v3 X4).
        fromResult = RetryInterceptor.finishOf(response)
    } catch (e: IOException) {
        failure = e
        fromResult = RetryInterceptor.finishOf(e)
    } finally {
        canceller.shutdownNow()
    }
    val elapsedMs = (System.nanoTime() - started) / 1_000_000
    val events = recorder.events.toList()
    val finishes = recorder.finishes.toList()
    val finish = finishes.lastOrNull()
    val error =
        when {
            finish == null -> "mismatch"
            (failure != null) != (finish.outcome != "status") -> "mismatch"
            failure != null -> finish.outcome
            else -> null
        }
    val out = StringBuilder("{")
    field(out, "id", id)
    field(out, "status", status)
    field(out, "error", error)
    field(out, "body", read)
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
    finishLine(out, finish)
    out.append(',')
    fromResult?.let {
        // [P5] The finish read back from the response or the exception.
        out.append("\"finish_from_result\":")
        finishLine(out, it)
        out.append(',')
    }
    field(out, "finishes", finishes.size)
    field(out, "reported_arrivals", finishes.sumOf { it.attempts + it.redirects })
    field(out, "error_type", failure?.javaClass?.name)
    out.append("\"elapsed_ms\":").append(elapsedMs).append('}')
    return out.toString()
}

/** A finish event in the line's field names, or `null`. */
private fun finishLine(
    out: StringBuilder,
    finish: RetryFinish?,
) {
    if (finish == null) {
        out.append("null")
        return
    }
    out.append('{')
    field(out, "attempts", finish.attempts)
    field(out, "reason", finish.reason)
    field(out, "outcome", finish.outcome)
    field(out, "status", finish.status)
    field(out, "timed_out", finish.timedOut)
    field(out, "redirects", finish.redirects)
    field(out, "total_delay_ms", finish.totalDelayMs)
    field(out, "server_delay_ms", finish.serverDelayMs)
    operation(out, finish.method, finish.pathTemplate, finish.operationId)
    out.append('}')
}

/** Open descriptors and resident memory, from /proc/self. */
private fun resources(): String {
    val fds = File("/proc/self/fd").list()?.size ?: 0
    val rss =
        File("/proc/self/status")
            .readLines()
            .firstOrNull { it.startsWith("VmRSS:") }
            ?.split(Regex("\\s+"))
            ?.getOrNull(1) ?: "0"
    return "{\"fds\":$fds,\"rss_kb\":$rss}"
}

/** The soak: one client for every request of the plan (conformance/faults/README.md). */
private fun soak(
    plan: Map<String, Any?>,
    targets: Targets,
) {
    val base = targets.base("server")
    val recorder = Recorder(targets, base, true, plan["attempt_timeout_ms"] as Long?)
    try {
        warmUp(recorder, "$base/health", false, "soak-warmup", targets)
        println("{\"soak_start\":${resources()}}")
        for (request in plan["requests"] as List<*>) {
            val scenario = request.asObject()
            println(request(scenario, base + scenario["path"] as String, recorder, targets))
            System.out.flush()
        }
        // A full collection first, so that memory counts what is kept, not what is garbage.
        System.gc()
        println("{\"soak_end\":${resources()}}")
    } finally {
        recorder.close()
    }
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
 * The overhead mode: a bare client, one with the adapter (defaults, no callbacks) and one whose
 * calls resilience4j-retry wraps (its defaults, retrying 5xx results too: the peer, issue 20 item
 * 7), each warmed up, then [rounds] rounds of one request each, every client first, second and
 * third in turn.
 */
private fun bench(
    targets: Targets,
    rounds: Int,
): String {
    val server = targets.base("server")
    val bare = builder(targets).build()
    val adapted =
        RetryInterceptor
            .builder(RetryPolicies.TABLE, RetryPolicies.DEFAULT_POLICY)
            .build()
            .install(builder(targets))
            .build()
    val peerClient = builder(targets).build()
    val retry = Retry.of("bench", RetryConfig.custom<Response>().retryOnResult { it.code >= 500 }.build())
    val request =
        Request
            .Builder()
            .url("$server/health")
            .header("x-fault-warmup", "1")
            .build()
    val peerCall = Retry.decorateCheckedSupplier(retry) { peerClient.newCall(request).execute() }

    fun read(response: Response) {
        response.use {
            check(it.code == 200) { "warm-up request answered ${it.code}" }
            readBody(it)
        }
    }
    val sends: List<() -> Unit> =
        listOf(
            { read(bare.newCall(request).execute()) },
            { read(adapted.newCall(request).execute()) },
            { read(peerCall.get()) },
        )
    repeat(WARMUP_REQUESTS) { sends.forEach { it() } }
    val times = List(sends.size) { LongArray(rounds) }
    val allocated = LongArray(sends.size)
    val threads = ManagementFactory.getThreadMXBean() as com.sun.management.ThreadMXBean
    val thread = Thread.currentThread().id
    for (i in 0 until rounds) {
        for (k in sends.indices) {
            val n = (i + k) % sends.size
            val bytes = threads.getThreadAllocatedBytes(thread)
            val started = System.nanoTime()
            sends[n]()
            times[n][i] = System.nanoTime() - started
            allocated[n] += threads.getThreadAllocatedBytes(thread) - bytes
        }
    }
    val (bareUs, adapterUs, peerUs) = times.map { median(it) / 1000.0 }
    listOf(bare, adapted, peerClient).forEach {
        it.dispatcher.executorService.shutdown()
        it.connectionPool.evictAll()
    }
    return String.format(
        java.util.Locale.ROOT,
        "{\"bench\": {\"requests\": %d, \"bare_us\": %.2f, \"adapter_us\": %.2f, \"overhead_us\": %.2f, " +
            "\"overhead_pct\": %.2f, \"allocated_bytes_per_request\": %d, " +
            "\"allocation_counter\": \"ThreadMXBean.getThreadAllocatedBytes (calling thread)\", " +
            "\"peers\": [{\"name\": \"resilience4j-retry %s\", \"us\": %.2f, \"overhead_us\": %.2f, " +
            "\"overhead_pct\": %.2f, \"allocated_bytes_per_request\": %d}]}}",
        rounds,
        bareUs,
        adapterUs,
        adapterUs - bareUs,
        (adapterUs - bareUs) / bareUs * 100,
        (allocated[1] - allocated[0]) / rounds,
        RESILIENCE4J_VERSION,
        peerUs,
        peerUs - bareUs,
        (peerUs - bareUs) / bareUs * 100,
        (allocated[2] - allocated[0]) / rounds,
    )
}

/** The resilience4j-retry release scripts/bootstrap.d/kotlin.sh installs (R4J_VERSION there). */
private const val RESILIENCE4J_VERSION = "2.4.0"

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
