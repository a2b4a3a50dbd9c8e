// Unit tests of RetryInterceptor.kt against a real OkHttp client and a small HTTP/1.1 server of
// its own on 127.0.0.1 (an ephemeral port), compiled with the runtime and its tests in one kotlinc
// call and run with `java` (see README.md). No test library: `main` runs every test, prints
// failures and exits non-zero.

package retrygen.adaptertest

import okhttp3.Call
import okhttp3.Callback
import okhttp3.Dns
import okhttp3.MediaType.Companion.toMediaType
import okhttp3.OkHttpClient
import okhttp3.Protocol
import okhttp3.Request
import okhttp3.RequestBody
import okhttp3.RequestBody.Companion.toRequestBody
import okhttp3.Response
import okhttp3.ResponseBody
import okio.BufferedSink
import retrygen.generated.DecisionInput
import retrygen.generated.DecisionReason
import retrygen.generated.IdempotencyKeyFormat
import retrygen.generated.Jitter
import retrygen.generated.Operation
import retrygen.generated.OperationTable
import retrygen.generated.Outcome
import retrygen.generated.ReplayClass
import retrygen.generated.RetryAttempt
import retrygen.generated.RetryEvent
import retrygen.generated.RetryFinish
import retrygen.generated.RetryInputException
import retrygen.generated.RetryInterceptor
import retrygen.generated.RetryOverrides
import retrygen.generated.RetryPolicy
import retrygen.generated.RetryRuntime
import retrygen.generated.StreamResumeException
import java.io.BufferedInputStream
import java.io.ByteArrayOutputStream
import java.io.DataInputStream
import java.io.File
import java.io.IOException
import java.io.InputStream
import java.io.OutputStream
import java.net.ConnectException
import java.net.InetAddress
import java.net.ServerSocket
import java.net.Socket
import java.net.SocketTimeoutException
import java.security.KeyStore
import java.time.Duration
import java.util.Collections
import java.util.concurrent.CompletableFuture
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import javax.net.ssl.KeyManagerFactory
import javax.net.ssl.SSLContext
import javax.net.ssl.SSLPeerUnverifiedException
import javax.net.ssl.SSLServerSocket
import javax.net.ssl.TrustManagerFactory
import javax.net.ssl.X509TrustManager
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

private fun expectTrue(
    what: String,
    condition: Boolean,
) {
    checks++
    if (!condition) {
        failures += what
    }
}

private fun op(
    method: String,
    path: String,
    id: String,
    replayClass: ReplayClass,
    header: String? = null,
): Operation = Operation(method, path, path, id, replayClass, header)

private val table: OperationTable =
    OperationTable(
        "/v1",
        listOf(
            op("GET", "/items/{id}", "getItem", ReplayClass.IDEMPOTENT),
            op("PUT", "/items/{id}", "replaceItem", ReplayClass.IDEMPOTENT),
            op("POST", "/items", "createItem", ReplayClass.NON_REPLAYABLE),
            op("POST", "/items/{id}/snapshots", "snapshotItem", ReplayClass.KEYED, "Idempotency-Key"),
            op("POST", "/items/{id}/exec", "execItem", ReplayClass.NO_RETRY),
            Operation("GET", "/items/{id}/events", "/items/{id}/events", "itemEvents", ReplayClass.IDEMPOTENT, null, true, true),
            Operation("POST", "/items/{id}/runs", "/items/{id}/runs", "runItem", ReplayClass.NON_REPLAYABLE, null, true, true),
            Operation("GET", "/items/{id}/metrics", "/items/{id}/metrics", "itemMetrics", ReplayClass.IDEMPOTENT, null, true, false),
        ),
    )

/** Millisecond backoffs without jitter (1, 2, 4) and a budget of three retries or one timeout. */
private val policy: RetryPolicy =
    RetryPolicy(
        maxRetries = 3,
        initialBackoffMs = 1,
        maxBackoffMs = 4,
        jitter = Jitter.NONE,
        budgetCapacity = 15,
        budgetRetryCost = 5,
        budgetTimeoutCost = 10,
    )

private val uuidV4 = Regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")

/** What one arrival at the [TestServer] carried; header names lower-cased. */
private class Arrival(
    val method: String,
    val target: String,
    val headers: Map<String, String>,
    val body: String,
)

/**
 * One answer of the server's script: a status and [body], or `reset`, `close`, `stall`,
 * `answer_then_close`, `close_after_headers` (the head announces [body]'s length, then the
 * connection closes: a body cut).
 */
private class Step(
    val status: Int = 200,
    val headers: Map<String, String> = emptyMap(),
    val action: String? = null,
    val ms: Long = 0,
    val body: String = "ok",
    // An event stream: these chunks (each after [ms]), then the end, or a reset when [drop].
    val sse: List<String>? = null,
    val drop: Boolean = false,
    // Milliseconds the stream is held open after its chunks, before its end.
    val hold: Long = 0,
)

/**
 * A real HTTP/1.1 server with keep-alive: arrival n gets step min(n, last) of [script]. A
 * connection whose first byte is not a letter (a TLS ClientHello) is closed at once.
 */
private class TestServer(
    private val script: List<Step>,
) : AutoCloseable {
    private val listener = ServerSocket(0, 50, InetAddress.getLoopbackAddress())
    val arrivals: MutableList<Arrival> = Collections.synchronizedList(ArrayList())
    val url: String = "http://127.0.0.1:${listener.localPort}"

    init {
        daemon { acceptLoop() }
    }

    private fun acceptLoop() {
        while (true) {
            val socket =
                try {
                    listener.accept()
                } catch (e: IOException) {
                    return
                }
            daemon { serve(socket) }
        }
    }

    private fun serve(socket: Socket) {
        try {
            socket.use { serveRequests(it) }
        } catch (e: IOException) {
            // The client went away.
        }
    }

    private fun serveRequests(socket: Socket) {
        val input = BufferedInputStream(socket.getInputStream())
        val output = socket.getOutputStream()
        while (true) {
            val head = readHead(input) ?: return
            val lines = head.split("\r\n")
            val (method, target) = lines[0].split(" ")
            val headers = HashMap<String, String>()
            for (line in lines.drop(1)) {
                val colon = line.indexOf(':')
                if (colon > 0) {
                    headers[line.substring(0, colon).trim().lowercase()] = line.substring(colon + 1).trim()
                }
            }
            val body = readBody(input, headers)
            val step =
                synchronized(arrivals) {
                    arrivals += Arrival(method, target, headers, body)
                    script[minOf(arrivals.size, script.size) - 1]
                }
            when (step.action) {
                "reset" -> {
                    socket.setSoLinger(true, 0)
                    return
                }

                "close" -> {
                    return
                }

                "stall" -> {
                    Thread.sleep(step.ms)
                }
            }
            if (step.sse != null) {
                serveStream(socket, output, step)
                if (step.drop) {
                    return
                }
                continue
            }
            val reply = StringBuilder("HTTP/1.1 ${step.status} X\r\n")
            step.headers.forEach { (name, value) -> reply.append("$name: $value\r\n") }
            reply.append("Content-Length: ${step.body.toByteArray().size}\r\n\r\n")
            if (step.action != "close_after_headers") {
                reply.append(step.body)
            }
            output.write(reply.toString().toByteArray())
            output.flush()
            if (step.action == "close_after_headers") {
                return
            }
            if (step.action == "answer_then_close") {
                // A keep-alive answer, then the server closes the idle connection: stale in the pool.
                return
            }
        }
    }

    /** A chunked `text/event-stream` response of [step]'s chunks; a drop resets the connection. */
    private fun serveStream(
        socket: Socket,
        output: OutputStream,
        step: Step,
    ) {
        val head = StringBuilder("HTTP/1.1 ${step.status} X\r\n")
        val headers = mapOf("Content-Type" to "text/event-stream") + step.headers
        headers.forEach { (name, value) -> head.append("$name: $value\r\n") }
        head.append("Transfer-Encoding: chunked\r\n\r\n")
        output.write(head.toString().toByteArray())
        output.flush()
        for (chunk in step.sse.orEmpty()) {
            if (step.ms > 0) {
                Thread.sleep(step.ms)
            }
            val bytes = chunk.toByteArray()
            output.write("${Integer.toHexString(bytes.size)}\r\n".toByteArray())
            output.write(bytes)
            output.write("\r\n".toByteArray())
            output.flush()
        }
        if (step.hold > 0) {
            Thread.sleep(step.hold)
        }
        if (step.drop) {
            // Time for the client to read what was sent: a reset discards what it has not read.
            Thread.sleep(DROP_PAUSE_MS)
            socket.setSoLinger(true, 0)
            return
        }
        output.write("0\r\n\r\n".toByteArray())
        output.flush()
    }

    private fun readHead(input: InputStream): String? {
        val head = ByteArrayOutputStream()
        while (true) {
            val b = input.read()
            if (b < 0 || (head.size() == 0 && !Character.isLetter(b))) {
                return null
            }
            head.write(b)
            val bytes = head.toByteArray()
            if (bytes.size >= 4 && String(bytes, bytes.size - 4, 4) == "\r\n\r\n") {
                return String(bytes, 0, bytes.size - 4)
            }
        }
    }

    private fun readBody(
        input: InputStream,
        headers: Map<String, String>,
    ): String {
        val body = ByteArrayOutputStream()
        if (headers["transfer-encoding"] == "chunked") {
            while (true) {
                val size = readLine(input).substringBefore(';').trim().toInt(16)
                if (size == 0) {
                    readLine(input)
                    break
                }
                body.write(readN(input, size))
                readLine(input)
            }
        } else {
            body.write(readN(input, headers["content-length"]?.toInt() ?: 0))
        }
        return body.toString(Charsets.UTF_8)
    }

    private fun readLine(input: InputStream): String {
        val line = StringBuilder()
        while (true) {
            val b = input.read()
            if (b < 0 || b == '\n'.code) {
                return line.toString().trimEnd('\r')
            }
            line.append(b.toChar())
        }
    }

    private fun readN(
        input: InputStream,
        n: Int,
    ): ByteArray {
        val bytes = ByteArray(n)
        var at = 0
        while (at < n) {
            val read = input.read(bytes, at, n - at)
            if (read < 0) {
                throw IOException("body cut short")
            }
            at += read
        }
        return bytes
    }

    override fun close() {
        listener.close()
    }
}

private const val DROP_PAUSE_MS: Long = 150

private fun daemon(body: () -> Unit) {
    val thread = Thread(body)
    thread.isDaemon = true
    thread.start()
}

/** The callbacks' records and the result of one request. */
private class Run {
    val events: MutableList<RetryEvent> = Collections.synchronizedList(ArrayList())
    val finishes: MutableList<RetryFinish> = Collections.synchronizedList(ArrayList())
    var status: Int? = null
    var body: String? = null
    var headers: List<Pair<String, String>> = emptyList()
    var error: Exception? = null
    var elapsedMs: Long = 0

    // The finish read back from what the call returned or threw (P5), and the returned response's
    // request as OkHttp handed it over.
    var finishFromResult: RetryFinish? = null
    var responseRequest: Request? = null

    val finish: RetryFinish? get() = finishes.singleOrNull()

    fun eventPairs(): List<Pair<String, Long>> = events.map { it.reason.wireName to it.delayMs }
}

private fun interceptor(
    run: Run,
    baseUrl: String?,
    mintKeys: Boolean = true,
    attemptTimeout: Duration? = null,
    attemptHeader: String? = null,
    readBodyMaxBytes: Long = 0,
    withPolicy: RetryPolicy = policy,
): RetryInterceptor =
    RetryInterceptor
        .builder(table, withPolicy)
        .baseUrl(baseUrl)
        .onRetry { run.events += it }
        .onFinish { run.finishes += it }
        .mintIdempotencyKeys(mintKeys)
        .attemptTimeout(attemptTimeout)
        .attemptHeader(attemptHeader)
        .readBodyMaxBytes(readBodyMaxBytes)
        .build()

/** Sends [request] through [client], reading the whole body; cancels the call after [cancelAfterMs]. */
private fun send(
    client: OkHttpClient,
    request: Request,
    run: Run,
    cancelAfterMs: Long? = null,
) {
    val call = client.newCall(request)
    val canceller = Executors.newSingleThreadScheduledExecutor()
    if (cancelAfterMs != null) {
        canceller.schedule({ call.cancel() }, cancelAfterMs, TimeUnit.MILLISECONDS)
    }
    val started = System.nanoTime()
    try {
        call.execute().use { response ->
            run.status = response.code
            run.finishFromResult = RetryInterceptor.finishOf(response)
            run.responseRequest = response.request
            run.headers = response.headers.map { it.first to it.second }
            // Nullable in OkHttp 4, not in 5: the same code compiles warning-free on both.
            val body: ResponseBody? = response.body
            run.body = body?.string()
        }
    } catch (e: IOException) {
        run.error = e
        run.finishFromResult = RetryInterceptor.finishOf(e)
    } catch (e: IllegalStateException) {
        run.error = e
    } finally {
        run.elapsedMs = (System.nanoTime() - started) / 1_000_000
        canceller.shutdownNow()
    }
}

/** One request through a fresh client with the interceptor installed; returns what it saw. */
private fun exchange(
    script: List<Step>,
    method: String,
    path: String,
    body: RequestBody? = null,
    headers: Map<String, String> = emptyMap(),
    mintKeys: Boolean = true,
    attemptTimeout: Duration? = null,
    cancelAfterMs: Long? = null,
    attemptHeader: String? = null,
    readBodyMaxBytes: Long = 0,
    overrides: RetryOverrides? = null,
    withPolicy: RetryPolicy = policy,
    check: (Run, TestServer, RetryInterceptor) -> Unit,
) {
    TestServer(script).use { server ->
        val run = Run()
        val retries = interceptor(run, "${server.url}/v1", mintKeys, attemptTimeout, attemptHeader, readBodyMaxBytes, withPolicy)
        val client = retries.install(OkHttpClient.Builder()).build()
        val request = Request.Builder().url("${server.url}/v1$path").method(method, body)
        headers.forEach { (name, value) -> request.header(name, value) }
        overrides?.let { request.tag(RetryOverrides::class.java, it) }
        send(client, request.build(), run, cancelAfterMs)
        check(run, server, retries)
        client.connectionPool.evictAll()
    }
}

private fun expectFinish(
    what: String,
    run: Run,
    attempts: Int,
    reason: String,
    outcome: String,
    timedOut: Boolean = false,
) {
    expect("$what: one finish event", run.finishes.size, 1)
    val finish = run.finish ?: return
    expect("$what: attempts", finish.attempts, attempts)
    expect("$what: reason", finish.reason, reason)
    expect("$what: outcome", finish.outcome, outcome)
    expect("$what: timed out", finish.timedOut, timedOut)
    expect("$what: status", finish.status, run.status)
    expect("$what: failed exactly when the outcome is not a status", run.error == null, outcome == "status")
    // [P5] The same event on what the call returned or threw, whatever the scenario.
    if (run.error is IOException || run.error == null) {
        expect("$what: finish on the result", run.finishFromResult, finish)
    }
}

private fun json(text: String): RequestBody = text.toRequestBody("application/json".toMediaType())

/** A body OkHttp can write only once. */
private fun oneShot(text: String): RequestBody =
    object : RequestBody() {
        override fun contentType() = "application/json".toMediaType()

        override fun isOneShot(): Boolean = true

        override fun writeTo(sink: BufferedSink) {
            sink.writeUtf8(text)
        }
    }

private fun statusTests() {
    exchange(listOf(Step(503), Step(503), Step(200)), "GET", "/items/7") { run, server, retries ->
        expect("503 503 200: status", run.status, 200)
        expect("503 503 200: body", run.body, "ok")
        expect("503 503 200: arrivals", server.arrivals.size, 3)
        expect("503 503 200: events", run.eventPairs(), listOf("retryable_status" to 1L, "retryable_status" to 2L))
        expect("503 503 200: event template", run.events.map { it.pathTemplate }.distinct(), listOf<String?>("/items/{id}"))
        expect("503 503 200: event operation", run.events.map { it.operationId }.distinct(), listOf<String?>("getItem"))
        expect("503 503 200: event attempts", run.events.map { it.attempt }, listOf(1L, 2L))
        expectFinish("503 503 200", run, 3, "status_not_retryable", "status")
        expect("503 503 200: finish template", run.finish?.pathTemplate, "/items/{id}")
        // Two retries of 5 taken from 15, then the success gives the last retry's cost back (K3).
        expect("503 503 200: budget", retries.budgetTokens, 10L)
    }
    exchange(listOf(Step(503)), "GET", "/items/7") { run, server, _ ->
        expect("503 exhausted: status", run.status, 503)
        expect("503 exhausted: arrivals", server.arrivals.size, 4)
        expect("503 exhausted: events", run.eventPairs().map { it.second }, listOf(1L, 2L, 4L))
        expectFinish("503 exhausted", run, 4, "exhausted", "status")
    }
    exchange(listOf(Step(503), Step(201)), "POST", "/items", json("{}")) { run, server, retries ->
        expect("POST 503: arrivals", server.arrivals.size, 1)
        expect("POST 503: status", run.status, 503)
        expectFinish("POST 503", run, 1, "not_replayable", "status")
        expect("POST 503: budget untouched", retries.budgetTokens, 15L)
    }
    exchange(listOf(Step(429, mapOf("Retry-After" to "0")), Step(201)), "POST", "/items", json("{\"a\":1}")) { run, server, _ ->
        expect("POST 429: arrivals", server.arrivals.size, 2)
        expect("POST 429: bodies replayed", server.arrivals.map { it.body }, listOf("{\"a\":1}", "{\"a\":1}"))
        expect("POST 429: events", run.eventPairs(), listOf("rejected_status" to 0L))
        expectFinish("POST 429", run, 2, "status_not_retryable", "status")
    }
    exchange(listOf(Step(503, mapOf("x-should-retry" to "false")), Step(200)), "GET", "/items/7") { run, server, _ ->
        expect("directive false: arrivals", server.arrivals.size, 1)
        expectFinish("directive false", run, 1, "server_said_no", "status")
    }
    exchange(listOf(Step(400, mapOf("X-Should-Retry" to " TRUE ")), Step(200)), "GET", "/items/7") { run, _, _ ->
        expect("directive true: events", run.eventPairs(), listOf("server_said_yes" to 1L))
    }
    exchange(listOf(Step(503, mapOf("retry-after-ms" to "20", "Retry-After" to "3600")), Step(200)), "GET", "/items/7") { run, _, _ ->
        expect("retry-after-ms wins: events", run.eventPairs(), listOf("retryable_status" to 20L))
        expectTrue("retry-after-ms wins: slept", run.elapsedMs >= 20)
    }
    exchange(listOf(Step(503), Step(200)), "POST", "/items/7/exec", json("ls")) { run, server, _ ->
        expect("no retry: arrivals", server.arrivals.size, 1)
        expectFinish("no retry", run, 1, "no_retry_operation", "status")
    }
    exchange(listOf(Step(503), Step(200)), "GET", "/things/7") { run, server, _ ->
        expect("unknown GET: arrivals", server.arrivals.size, 2)
        expect("unknown GET: finish method", run.finish?.method, "GET")
        expect("unknown GET: finish template", run.finish?.pathTemplate, null)
    }
}

private fun failureTests() {
    exchange(listOf(Step(action = "reset"), Step(200)), "PUT", "/items/7", json("{\"cpu\":2}")) { run, server, _ ->
        expect("PUT reset: status", run.status, 200)
        expect("PUT reset: bodies", server.arrivals.map { it.body }, listOf("{\"cpu\":2}", "{\"cpu\":2}"))
        expect("PUT reset: events", run.eventPairs(), listOf("transport_failure" to 1L))
        expectFinish("PUT reset", run, 2, "status_not_retryable", "status")
    }
    exchange(listOf(Step(action = "reset"), Step(201)), "POST", "/items", json("{}")) { run, server, _ ->
        expect("POST reset: arrivals", server.arrivals.size, 1)
        expectTrue("POST reset: OkHttp's own IOException, got ${run.error}", run.error is IOException)
        expectFinish("POST reset", run, 1, "not_replayable", "transport")
    }
    exchange(listOf(Step(action = "close")), "GET", "/items/7") { run, server, _ ->
        expect("GET close: arrivals", server.arrivals.size, 4)
        expect("GET close: events", run.eventPairs().map { it.first }.distinct(), listOf("transport_failure"))
        expectFinish("GET close", run, 4, "exhausted", "transport")
    }
    // A port nothing listens on: bound, then closed.
    val closed = ServerSocket(0, 1, InetAddress.getLoopbackAddress()).use { it.localPort }
    val run = Run()
    val retries = interceptor(run, "http://127.0.0.1:$closed/v1")
    val client = retries.install(OkHttpClient.Builder()).build()
    send(
        client,
        Request
            .Builder()
            .url("http://127.0.0.1:$closed/v1/items")
            .post(json("{}"))
            .build(),
        run,
    )
    expectTrue("refused: ConnectException, got ${run.error}", run.error is ConnectException)
    expect("refused: events", run.eventPairs(), listOf("connect_failure" to 1L, "connect_failure" to 2L, "connect_failure" to 4L))
    expectFinish("refused", run, 4, "exhausted", "connect")
    expect("refused: finish operation", run.finish?.operationId, "createItem")
    // TLS to a server that closes on the ClientHello: the handshake fails, nothing was sent.
    TestServer(listOf(Step(200))).use { server ->
        val tls = Run()
        val https = interceptor(tls, null).install(OkHttpClient.Builder()).build()
        send(
            https,
            Request
                .Builder()
                .url(server.url.replace("http:", "https:") + "/v1/items")
                .post(json("{}"))
                .build(),
            tls,
        )
        expect("TLS: arrivals", server.arrivals.size, 0)
        expectFinish("TLS", tls, 4, "exhausted", "connect")
    }
}

private fun connectTimeoutTest() {
    // A listener that never accepts, its backlog filled: the kernel drops further SYNs, so the
    // connect times out (loopback only).
    ServerSocket(0, 1, InetAddress.getLoopbackAddress()).use { listener ->
        val fillers = (1..4).mapNotNull { runCatching { Socket().apply { connect(listener.localSocketAddress, 200) } }.getOrNull() }
        try {
            val run = Run()
            val client =
                interceptor(run, null)
                    .install(OkHttpClient.Builder().connectTimeout(Duration.ofMillis(150)))
                    .build()
            send(
                client,
                Request
                    .Builder()
                    .url("http://127.0.0.1:${listener.localPort}/v1/items")
                    .post(json("{}"))
                    .build(),
                run,
            )
            expectTrue("connect timeout: SocketTimeoutException, got ${run.error}", run.error is SocketTimeoutException)
            expect("connect timeout: outcome", run.finish?.outcome, "connect")
            expect("connect timeout: not timed out after connecting", run.finish?.timedOut, false)
            // The attempt timeout bounds the client's 10 s connect timeout.
            val bounded = Run()
            val short = interceptor(bounded, null, attemptTimeout = Duration.ofMillis(150)).install(OkHttpClient.Builder()).build()
            send(short, Request.Builder().url("http://127.0.0.1:${listener.localPort}/v1/items/7").build(), bounded)
            expect("attempt timeout while connecting: outcome", bounded.finish?.outcome, "connect")
            expect("attempt timeout while connecting: attempts", bounded.finish?.attempts, 4)
            expectTrue("attempt timeout while connecting: elapsed ${bounded.elapsedMs} ms", bounded.elapsedMs < 3000)
        } finally {
            fillers.forEach { it.close() }
        }
    }
}

private fun keyTests() {
    val snapshot = listOf(Step(action = "reset"), Step(201))
    exchange(snapshot, "POST", "/items/7/snapshots", json("{}")) { run, server, _ ->
        val keys = server.arrivals.map { it.headers["idempotency-key"] }
        expect("minted: arrivals", keys.size, 2)
        expect("minted: one key for every attempt", keys.distinct().size, 1)
        expectTrue("minted: a UUID v4, got ${keys.firstOrNull()}", keys.firstOrNull()?.let(uuidV4::matches) == true)
        expectFinish("minted", run, 2, "status_not_retryable", "status")
    }
    exchange(snapshot, "POST", "/items/7/snapshots", json("{}"), mapOf("idempotency-key" to "caller-1")) { _, server, _ ->
        expect("caller key: kept", server.arrivals.map { it.headers["idempotency-key"] }, listOf<String?>("caller-1", "caller-1"))
    }
    exchange(snapshot, "POST", "/items/7/snapshots", json("{}"), mapOf("Idempotency-Key" to " \t")) { _, server, _ ->
        val keys = server.arrivals.map { it.headers["idempotency-key"] }
        expectTrue("blank key: replaced, got $keys", keys.size == 2 && keys.distinct().size == 1 && uuidV4.matches(keys[0] ?: ""))
    }
    exchange(snapshot, "POST", "/items/7/snapshots", json("{}"), mintKeys = false) { run, server, _ ->
        expect("minting off: no key", server.arrivals.map { it.headers["idempotency-key"] }, listOf<String?>(null))
        expectFinish("minting off", run, 1, "not_replayable", "transport")
    }
    exchange(listOf(Step(201)), "POST", "/items", json("{}")) { _, server, _ ->
        expect("not keyed: no key", server.arrivals.map { it.headers["idempotency-key"] }, listOf<String?>(null))
    }
    exchange(listOf(Step(409), Step(201)), "POST", "/items/7/snapshots", json("{}")) { run, _, _ ->
        expect("409 with key: events", run.eventPairs(), listOf("key_in_flight" to 1L))
    }
}

private fun bodyTests() {
    exchange(listOf(Step(429, mapOf("Retry-After" to "0")), Step(201)), "POST", "/items", oneShot("{\"s\":1}")) { run, server, retries ->
        expect("one-shot: arrivals", server.arrivals.size, 1)
        expect("one-shot: body", server.arrivals.map { it.body }, listOf("{\"s\":1}"))
        expect("one-shot: events", run.events.size, 0)
        expectFinish("one-shot", run, 1, RetryFinish.BODY_NOT_REPLAYABLE, "status")
        // The retry it would have been granted took no tokens.
        expect("one-shot: budget untouched", retries.budgetTokens, 15L)
    }
    exchange(listOf(Step(action = "reset"), Step(200)), "PUT", "/items/7", oneShot("{}")) { run, server, _ ->
        expect("one-shot reset: arrivals", server.arrivals.size, 1)
        expectFinish("one-shot reset", run, 1, RetryFinish.BODY_NOT_REPLAYABLE, "transport")
    }
}

private fun timeoutTests() {
    val timeout = Duration.ofMillis(200)
    exchange(listOf(Step(action = "stall", ms = 3000), Step(200)), "GET", "/items/7", attemptTimeout = timeout) { run, server, retries ->
        expect("stall then ok: status", run.status, 200)
        expect("stall then ok: arrivals", server.arrivals.size, 2)
        expect("stall then ok: events", run.eventPairs(), listOf("transport_failure" to 1L))
        expectFinish("stall then ok", run, 2, "status_not_retryable", "status")
        // The timeout retry cost 10 of 15; the success gives those 10 back.
        expect("stall then ok: budget", retries.budgetTokens, 15L)
        expectTrue("stall then ok: elapsed ${run.elapsedMs} ms", run.elapsedMs < 2000)
    }
    exchange(listOf(Step(action = "stall", ms = 3000)), "GET", "/items/7", attemptTimeout = timeout) { run, server, _ ->
        expect("stall: arrivals", server.arrivals.size, 2)
        expectTrue("stall: SocketTimeoutException, got ${run.error}", run.error is SocketTimeoutException)
        expectFinish("stall", run, 2, "budget_exhausted", "transport", timedOut = true)
    }
}

private fun cancelTests() {
    exchange(listOf(Step(action = "stall", ms = 3000), Step(200)), "GET", "/items/7", cancelAfterMs = 200) { run, server, _ ->
        expect("cancel in flight: arrivals", server.arrivals.size, 1)
        expectFinish("cancel in flight", run, 1, "aborted", "aborted")
        expectTrue("cancel in flight: elapsed ${run.elapsedMs} ms", run.elapsedMs < 1500)
    }
    val slow = listOf(Step(503, mapOf("retry-after-ms" to "1500")), Step(200))
    exchange(slow, "GET", "/items/7", cancelAfterMs = 250) { run, server, _ ->
        expect("cancel in sleep: arrivals", server.arrivals.size, 1)
        expect("cancel in sleep: events", run.eventPairs(), listOf("retryable_status" to 1500L))
        expectFinish("cancel in sleep", run, 1, "aborted", "aborted")
        expect("cancel in sleep: OkHttp's message", run.error?.message, "Canceled")
        expectTrue("cancel in sleep: elapsed ${run.elapsedMs} ms", run.elapsedMs < 1200)
    }
}

private fun callTests() {
    // The client's call timeout cancels the call: aborted, OkHttp's InterruptedIOException kept.
    TestServer(listOf(Step(action = "stall", ms = 3000), Step(200))).use { server ->
        val run = Run()
        val client = interceptor(run, null).install(OkHttpClient.Builder().callTimeout(Duration.ofMillis(200))).build()
        send(client, Request.Builder().url("${server.url}/v1/items/7").build(), run)
        expect("call timeout: arrivals", server.arrivals.size, 1)
        expectFinish("call timeout", run, 1, "aborted", "aborted")
        expect("call timeout: OkHttp's message", run.error?.message, "timeout")
    }
    // enqueue: the interceptor runs, and sleeps, on OkHttp's dispatcher thread.
    TestServer(listOf(Step(503), Step(200))).use { server ->
        val run = Run()
        val client = interceptor(run, null).install(OkHttpClient.Builder()).build()
        val done = CompletableFuture<Int>()
        client.newCall(Request.Builder().url("${server.url}/v1/items/7").build()).enqueue(
            object : Callback {
                override fun onFailure(
                    call: Call,
                    e: IOException,
                ) {
                    done.completeExceptionally(e)
                }

                override fun onResponse(
                    call: Call,
                    response: Response,
                ) {
                    response.use { done.complete(it.code) }
                }
            },
        )
        expect("enqueue: status", runCatching { done.get(5, TimeUnit.SECONDS) }.getOrNull(), 200)
        expect("enqueue: events", run.eventPairs(), listOf("retryable_status" to 1L))
        expect("enqueue: finish", run.finish?.attempts, 2)
        // Its threads are not daemons: let the test's JVM end.
        client.dispatcher.executorService.shutdown()
    }
}

/**
 * A status in none of the policy's lists, without a directive, is decided without a decision
 * input; the shortcut must be what decide says for every such status, class, key and retry count.
 */
private fun settledStatusTests() {
    var compared = 0
    for (p in listOf(policy, RetryPolicy(), policy.newBuilder().maxRetries(0).build())) {
        val listed = p.retryableStatuses + p.rejectedStatuses + p.keyInFlightStatuses + p.keyReusedStatuses
        for (status in 100..599) {
            if (status in listed) {
                continue
            }
            for (replayClass in ReplayClass.entries) {
                for (hasKey in listOf(false, true)) {
                    for (retriesUsed in 0L..p.maxRetries.toLong()) {
                        val input =
                            DecisionInput(replayClass, hasKey, Outcome.Status(status), retriesUsed, 0, 0, 0, 0.5, 7, false)
                        val decided = RetryRuntime.decide(p, input)
                        val settled = RetryInterceptor.settledDecision(replayClass, retriesUsed, p.maxRetries)
                        if (decided.retry != settled.retry || decided.reason != settled.reason || decided.delayMs != settled.delayMs) {
                            failures += "settled $status $replayClass key=$hasKey retries=$retriesUsed: decide $decided, shortcut $settled"
                        }
                        expectTrue("settled: decide leaves the budget", decided.budgetTokens == 7L)
                        compared++
                    }
                }
            }
        }
    }
    expectTrue("settled: compared $compared cases", compared > 10_000)
}

/** The adapter's public value types are no data classes (a field added later would break callers). */
private fun valueTypeTests() {
    for (type in listOf(RetryFinish::class.java, RetryOverrides::class.java, RetryAttempt::class.java)) {
        val generated = type.methods.map { it.name }.filter { it == "copy" || it.startsWith("component") }
        expect("${type.simpleName}: no data-class members", generated, emptyList<String>())
    }
    expect("overrides: equal by value", overrides { maxRetries(2) }, overrides { maxRetries(2) })
    expect("attempts: equal by value", RetryAttempt.of(40), RetryAttempt.of(40))
}

private fun overrides(build: RetryOverrides.Builder.() -> Unit): RetryOverrides = RetryOverrides.builder().apply(build).build()

/** [P1] Overrides on the request's tag, for that request only. */
private fun overrideTests() {
    exchange(listOf(Step(503), Step(200)), "GET", "/items/7", overrides = overrides { maxRetries(0) }) { run, server, retries ->
        expect("override max retries 0: arrivals", server.arrivals.size, 1)
        expect("override max retries 0: status", run.status, 503)
        expect("override max retries 0: no event", run.events.size, 0)
        expectFinish("override max retries 0", run, 1, "exhausted", "status")
        expect("override max retries 0: budget untouched", retries.budgetTokens, 15L)
    }
    exchange(listOf(Step(503)), "GET", "/items/7", overrides = overrides { maxRetries(1) }) { run, server, _ ->
        expect("override max retries 1: arrivals", server.arrivals.size, 2)
        expectFinish("override max retries 1", run, 2, "exhausted", "status")
    }
    val stall = listOf(Step(action = "stall", ms = 3000), Step(200))
    exchange(stall, "GET", "/items/7", overrides = overrides { attemptTimeout(Duration.ofMillis(200)) }) { run, server, _ ->
        expect("override attempt timeout: arrivals", server.arrivals.size, 2)
        expect("override attempt timeout: events", run.eventPairs(), listOf("transport_failure" to 1L))
        expectFinish("override attempt timeout", run, 2, "status_not_retryable", "status")
        expectTrue("override attempt timeout: elapsed ${run.elapsedMs} ms", run.elapsedMs < 2000)
    }
    // Duration.ZERO lifts the interceptor's attempt timeout: the stalled answer is waited for.
    val slow = listOf(Step(action = "stall", ms = 500), Step(200))
    exchange(slow, "GET", "/items/7", attemptTimeout = Duration.ofMillis(100), overrides = overrides { attemptTimeout(Duration.ZERO) }) {
        run,
        server,
        _,
        ->
        expect("override no attempt timeout: arrivals", server.arrivals.size, 1)
        expectFinish("override no attempt timeout", run, 1, "status_not_retryable", "status")
    }
    // The policy of the next request is the interceptor's again.
    TestServer(listOf(Step(503), Step(503), Step(200))).use { server ->
        val run = Run()
        val client = interceptor(run, "${server.url}/v1").install(OkHttpClient.Builder()).build()
        val url = "${server.url}/v1/items/7"
        send(
            client,
            Request
                .Builder()
                .url(url)
                .tag(RetryOverrides::class.java, overrides { maxRetries(0) })
                .build(),
            run,
        )
        expect("override for one request: one arrival", server.arrivals.size, 1)
        run.finishes.clear()
        send(client, Request.Builder().url(url).build(), run)
        expect("override for one request: the next one retried", run.finish?.attempts, 2)
        client.connectionPool.evictAll()
    }
    for ((what, build) in listOf<Pair<String, RetryOverrides.Builder.() -> Unit>>(
        "max retries -1" to { maxRetries(-1) },
        "max retries 101" to { maxRetries(101) },
        "negative attempt timeout" to { attemptTimeout(Duration.ofMillis(-1)) },
        "negative read bound" to { readBodyMaxBytes(-1) },
    )) {
        val thrown = runCatching { overrides(build) }.exceptionOrNull()
        expectTrue("override $what: IllegalArgumentException before anything is sent, got $thrown", thrown is IllegalArgumentException)
    }
    // Another origin's request ignores its overrides: one attempt as always, no body read.
    TestServer(listOf(Step(200, action = "close_after_headers"))).use { other ->
        val run = Run()
        val client = interceptor(run, "http://127.0.0.1:1/v1").install(OkHttpClient.Builder()).build()
        val request =
            Request
                .Builder()
                .url("${other.url}/v1/items/7")
                .tag(RetryOverrides::class.java, overrides { readBodyMaxBytes(1024) })
                .build()
        send(client, request, run)
        expect("other origin with overrides: one attempt", run.finish?.attempts, 1)
        expect("other origin with overrides: reason", run.finish?.reason, RetryFinish.FOREIGN_ORIGIN)
        expect("other origin with overrides: arrivals", other.arrivals.size, 1)
        // The body was not read inside the loop: the cut reaches the caller's read.
        expect("other origin with overrides: the cut is the caller's", run.body, null)
        expectTrue("other origin with overrides: the read failed, got ${run.error}", run.error is IOException)
    }
}

/** [P2, P3] The attempt's number below the interceptor, and the optional header. */
private fun attemptTests() {
    TestServer(listOf(Step(503), Step(503), Step(200))).use { server ->
        val run = Run()
        val seen = Collections.synchronizedList(ArrayList<Int?>())
        val client =
            interceptor(run, "${server.url}/v1")
                .install(OkHttpClient.Builder())
                // An application interceptor after the adapter's: it gets each attempt's request.
                .addInterceptor { chain ->
                    seen += chain.request().tag(RetryAttempt::class.java)?.number
                    chain.proceed(chain.request())
                }.build()
        send(client, Request.Builder().url("${server.url}/v1/items/7").build(), run)
        expect("attempt below: numbers", seen.toList(), listOf<Int?>(1, 2, 3))
        expect(
            "attempt below: no header without the option",
            server.arrivals.map {
                it.headers["x-retry-attempt"]
            },
            listOf<String?>(null, null, null),
        )
        client.connectionPool.evictAll()
    }
    val header = "X-Retry-Attempt"
    exchange(
        listOf(Step(503), Step(503), Step(200)),
        "GET",
        "/items/7",
        headers = mapOf("x-retry-attempt" to "9"),
        attemptHeader = header,
    ) {
        run,
        server,
        _,
        ->
        expect(
            "attempt header: values, the caller's replaced",
            server.arrivals.map {
                it.headers["x-retry-attempt"]
            },
            listOf<String?>("0", "1", "2"),
        )
        expectFinish("attempt header", run, 3, "status_not_retryable", "status")
    }
    exchange(listOf(Step(503), Step(201)), "POST", "/items", json("{}"), attemptHeader = header) { run, server, _ ->
        expect("attempt header on a POST: once", server.arrivals.map { it.headers["x-retry-attempt"] }, listOf<String?>("0"))
        expectFinish("attempt header on a POST", run, 1, "not_replayable", "status")
    }
    TestServer(listOf(Step(200))).use { other ->
        val run = Run()
        val client = interceptor(run, "http://127.0.0.1:1/v1", attemptHeader = header).install(OkHttpClient.Builder()).build()
        send(client, Request.Builder().url("${other.url}/v1/items/7").build(), run)
        expect("attempt header: never to another origin", other.arrivals.map { it.headers["x-retry-attempt"] }, listOf<String?>(null))
    }
    val bad = runCatching { RetryInterceptor.builder(table, policy).attemptHeader("X Retry").build() }.exceptionOrNull()
    expectTrue("attempt header: a name that is no token is refused, got $bad", bad is IllegalArgumentException)
}

/** [P4] Events with the attempt's status, failure and duration; the finish's total delay. */
private fun eventFactTests() {
    exchange(listOf(Step(503), Step(action = "stall", ms = 300), Step(200)), "GET", "/items/7", attemptTimeout = Duration.ofMillis(100)) {
        run,
        _,
        _,
        ->
        expect("event facts: statuses", run.events.map { it.status }, listOf<Int?>(503, null))
        expect("event facts: failures", run.events.map { it.failure }, listOf<String?>(null, "transport"))
        val timedOut = run.events.getOrNull(1)?.attemptDurationMs ?: 0
        expectTrue("event facts: the timed-out attempt took ~100 ms, got $timedOut", timedOut in 90..1000)
        expect("event facts: total delay", run.finish?.totalDelayMs, run.events.sumOf { it.delayMs })
    }
    // A port nothing listens on: connect failures.
    val closed = ServerSocket(0, 1, InetAddress.getLoopbackAddress()).use { it.localPort }
    val run = Run()
    val client = interceptor(run, "http://127.0.0.1:$closed/v1").install(OkHttpClient.Builder()).build()
    send(client, Request.Builder().url("http://127.0.0.1:$closed/v1/items/7").build(), run)
    expect("event facts: connect", run.events.map { it.failure }.distinct(), listOf<String?>("connect"))
    expect("event facts: connect total delay", run.finish?.totalDelayMs, 7L)
    // [P5] OkHttp's own exception, its type kept, with the finish attached.
    expectTrue("finish on the error: ConnectException, got ${run.error}", run.error is ConnectException)
    expect("finish on the error", run.finishFromResult, run.finish)
}

/** [P5] The finish on the returned response's request. */
private fun finishOnResultTests() {
    exchange(listOf(Step(503), Step(200)), "GET", "/items/7") { run, _, _ ->
        expectTrue("finish on the response: present", run.finishFromResult != null)
        expect("finish on the response: the same object onFinish got", run.finishFromResult === run.finish, true)
        expect("finish on the response: equal to onFinish's", run.finishFromResult, run.finish)
    }
    TestServer(listOf(Step(200))).use { server ->
        val plain = OkHttpClient()
        plain.newCall(Request.Builder().url(server.url).build()).execute().use { response ->
            expect("finish of a response that never passed the adapter", RetryInterceptor.finishOf(response), null)
        }
        expect("finish of an exception that never passed the adapter", RetryInterceptor.finishOf(IOException("x")), null)
        plain.connectionPool.evictAll()
    }
}

/** [P6] The body read inside the loop. */
private fun readBodyTests() {
    val cut = listOf(Step(200, action = "close_after_headers"), Step(200))
    exchange(cut, "GET", "/items/7", readBodyMaxBytes = 65536) { run, server, _ ->
        expect("body cut, read in the loop: arrivals", server.arrivals.size, 2)
        expect("body cut, read in the loop: body", run.body, "ok")
        expect("body cut, read in the loop: events", run.eventPairs(), listOf("transport_failure" to 1L))
        expect("body cut, read in the loop: the event's failure", run.events.map { it.failure }, listOf<String?>("transport"))
        expectFinish("body cut, read in the loop", run, 2, "status_not_retryable", "status")
    }
    exchange(cut, "GET", "/items/7", overrides = overrides { readBodyMaxBytes(65536) }) { run, server, _ ->
        expect("body cut, read by override: arrivals", server.arrivals.size, 2)
        expect("body cut, read by override: body", run.body, "ok")
    }
    // Off by default: the cut is the caller's, after one arrival.
    exchange(cut, "GET", "/items/7") { run, server, _ ->
        expect("body cut, not read: arrivals", server.arrivals.size, 1)
        expect("body cut, not read: the caller's read fails", run.body, null)
    }
    // The override turns it off for one request.
    exchange(cut, "GET", "/items/7", readBodyMaxBytes = 65536, overrides = overrides { readBodyMaxBytes(0) }) { _, server, _ ->
        expect("body cut, read turned off by override: arrivals", server.arrivals.size, 1)
    }
    exchange(listOf(Step(201, action = "close_after_headers"), Step(201)), "POST", "/items", json("{}"), readBodyMaxBytes = 65536) {
        run,
        server,
        _,
        ->
        expect("POST body cut: once", server.arrivals.size, 1)
        expectFinish("POST body cut", run, 1, "not_replayable", "transport")
    }
    // Longer than the bound: the prefix read, then the rest of the stream, untouched.
    val long = "x".repeat(10_000)
    exchange(listOf(Step(200, body = long)), "GET", "/items/7", readBodyMaxBytes = 100) { run, server, _ ->
        expect("long body: arrivals", server.arrivals.size, 1)
        expect("long body: whole", run.body, long)
    }
    // An event stream is never read inside the loop.
    val stream = listOf(Step(200, mapOf("Content-Type" to "text/event-stream; charset=utf-8"), "close_after_headers"), Step(200))
    exchange(stream, "GET", "/items/7", readBodyMaxBytes = 65536) { run, server, _ ->
        expect("event stream: arrivals", server.arrivals.size, 1)
        expect("event stream: the cut is the caller's", run.body, null)
    }
    val bad = runCatching { RetryInterceptor.builder(table, policy).readBodyMaxBytes(-1).build() }.exceptionOrNull()
    expectTrue("read bound: negative refused, got $bad", bad is IllegalArgumentException)
}

/** The result of an enqueued call: its response's status and body, or its failure. */
private class CallOutcome(
    val status: Int?,
    val body: String?,
    val error: IOException?,
    val finish: RetryFinish?,
)

/** Enqueues [request] on [calls] and returns the future of its outcome. */
private fun enqueue(
    calls: Call.Factory,
    request: Request,
): Pair<Call, CompletableFuture<CallOutcome>> {
    val done = CompletableFuture<CallOutcome>()
    val call = calls.newCall(request)
    call.enqueue(
        object : Callback {
            override fun onFailure(
                call: Call,
                e: IOException,
            ) {
                done.complete(CallOutcome(null, null, e, RetryInterceptor.finishOf(e)))
            }

            override fun onResponse(
                call: Call,
                response: Response,
            ) {
                response.use {
                    val body: ResponseBody? = it.body
                    done.complete(CallOutcome(it.code, body?.string(), null, RetryInterceptor.finishOf(it)))
                }
            }
        },
    )
    return call to done
}

/**
 * An enqueued call waits out its delay before a retry without holding a dispatcher slot: five
 * calls to one host waiting 2 s must not hold back a sixth (OkHttp runs 5 per host at once).
 */
private fun dispatcherTests() {
    val waiting = Step(503, mapOf("retry-after-ms" to "2000"))
    TestServer(listOf(waiting, waiting, waiting, waiting, waiting, Step(200))).use { server ->
        // A budget for the five retries.
        val retries = RetryInterceptor.builder(table, policy.newBuilder().budgetCapacity(100).build()).baseUrl("${server.url}/v1").build()
        val client = retries.install(OkHttpClient.Builder()).build()
        val calls: Call.Factory = retries.callFactory(client)
        val url = "${server.url}/v1/items/7"
        val five = (1..5).map { enqueue(calls, Request.Builder().url(url).build()).second }
        val deadline = System.nanoTime() + 5_000_000_000
        while (server.arrivals.size < 5 && System.nanoTime() < deadline) {
            Thread.sleep(5)
        }
        val started = System.nanoTime()
        val sixth = runCatching { enqueue(calls, Request.Builder().url(url).build()).second.get(5, TimeUnit.SECONDS) }.getOrNull()
        val elapsedMs = (System.nanoTime() - started) / 1_000_000
        expect("sixth call while five wait: status", sixth?.status, 200)
        expectTrue("sixth call while five wait: answered in $elapsedMs ms, not after the others' 2 s delay", elapsedMs < 1000)
        val outcomes = five.map { runCatching { it.get(10, TimeUnit.SECONDS) }.getOrNull() }
        expect("the five: retried to a 200", outcomes.map { it?.status }, List<Int?>(5) { 200 })
        expect("the five: two attempts each", outcomes.map { it?.finish?.attempts }, List<Int?>(5) { 2 })
        expect("the five: waited what was granted", outcomes.map { it?.finish?.totalDelayMs }, List<Long?>(5) { 2000L })
        expect("arrivals", server.arrivals.size, 11)
        client.dispatcher.executorService.shutdown()
    }
}

/** The enqueued path of callFactory: retries, stops, cancellation and the call timeout during the delay. */
private fun callFactoryTests() {
    TestServer(listOf(Step(503), Step(503), Step(200))).use { server ->
        val run = Run()
        val retries = interceptor(run, "${server.url}/v1")
        val client = retries.install(OkHttpClient.Builder()).build()
        val calls = retries.callFactory(client)
        val (_, done) = enqueue(calls, Request.Builder().url("${server.url}/v1/items/7").build())
        val outcome = runCatching { done.get(5, TimeUnit.SECONDS) }.getOrNull()
        expect("factory enqueue: status", outcome?.status, 200)
        expect("factory enqueue: body", outcome?.body, "ok")
        expect("factory enqueue: events", run.eventPairs(), listOf("retryable_status" to 1L, "retryable_status" to 2L))
        expect("factory enqueue: one finish", run.finishes.size, 1)
        expect("factory enqueue: finish", run.finish?.attempts, 3)
        expect("factory enqueue: finish on the response", outcome?.finish, run.finish)
        expect("factory enqueue: total delay", run.finish?.totalDelayMs, 3L)
        // Two retries of 5 taken from 15, then the success gives the last retry's cost back (K3).
        expect("factory enqueue: one budget", retries.budgetTokens, 10L)
        // execute() through the factory: the interceptor's own loop.
        run.finishes.clear()
        val executed = calls.newCall(Request.Builder().url("${server.url}/v1/items/7").build()).execute()
        executed.use { expect("factory execute: status", it.code, 200) }
        expect("factory execute: finish", run.finish?.attempts, 1)
        client.dispatcher.executorService.shutdown()
    }
    // A key minted once for all the calls of an enqueued request; a POST without one sent once.
    TestServer(listOf(Step(503), Step(201))).use { server ->
        val run = Run()
        val retries = interceptor(run, "${server.url}/v1")
        val client = retries.install(OkHttpClient.Builder()).build()
        val calls = retries.callFactory(client)
        val keyed =
            enqueue(
                calls,
                Request
                    .Builder()
                    .url("${server.url}/v1/items/7/snapshots")
                    .post(json("{}"))
                    .build(),
            ).second
        expect("factory keyed: status", runCatching { keyed.get(5, TimeUnit.SECONDS) }.getOrNull()?.status, 201)
        val keys = server.arrivals.map { it.headers["idempotency-key"] }
        expect("factory keyed: one key on both attempts", keys.distinct().size, 1)
        expectTrue("factory keyed: a UUID v4, got $keys", keys.all { it != null && uuidV4.matches(it) })
        client.dispatcher.executorService.shutdown()
    }
    TestServer(listOf(Step(503, mapOf("retry-after-ms" to "1500")), Step(200))).use { server ->
        val run = Run()
        val retries = interceptor(run, "${server.url}/v1")
        val client = retries.install(OkHttpClient.Builder()).build()
        val (call, done) = enqueue(retries.callFactory(client), Request.Builder().url("${server.url}/v1/items/7").build())
        Thread.sleep(300)
        val started = System.nanoTime()
        call.cancel()
        val outcome = runCatching { done.get(5, TimeUnit.SECONDS) }.getOrNull()
        val elapsedMs = (System.nanoTime() - started) / 1_000_000
        expect("factory cancel in the delay: OkHttp's message", outcome?.error?.message, "Canceled")
        expectTrue("factory cancel in the delay: at once, $elapsedMs ms", elapsedMs < 1000)
        expect("factory cancel in the delay: arrivals", server.arrivals.size, 1)
        expect("factory cancel in the delay: finish", run.finish?.let { it.attempts to it.reason }, 1 to "aborted")
        expect("factory cancel in the delay: finish on the error", outcome?.finish, run.finish)
        expect("factory cancel in the delay: cancelled", call.isCanceled(), true)
        client.dispatcher.executorService.shutdown()
    }
    TestServer(listOf(Step(503, mapOf("retry-after-ms" to "1500")), Step(200))).use { server ->
        val run = Run()
        val retries = interceptor(run, "${server.url}/v1")
        val client = retries.install(OkHttpClient.Builder().callTimeout(Duration.ofMillis(400))).build()
        val started = System.nanoTime()
        val (_, done) = enqueue(retries.callFactory(client), Request.Builder().url("${server.url}/v1/items/7").build())
        val outcome = runCatching { done.get(5, TimeUnit.SECONDS) }.getOrNull()
        val elapsedMs = (System.nanoTime() - started) / 1_000_000
        expect("factory call timeout in the delay: OkHttp's message", outcome?.error?.message, "timeout")
        expectTrue("factory call timeout in the delay: after ~400 ms, got $elapsedMs", elapsedMs in 300..1200)
        expect("factory call timeout in the delay: arrivals", server.arrivals.size, 1)
        expect("factory call timeout in the delay: finish", run.finish?.reason, "aborted")
        client.dispatcher.executorService.shutdown()
    }
    val notInstalled = runCatching { interceptor(Run(), null).callFactory(OkHttpClient()) }.exceptionOrNull()
    expectTrue("callFactory: refused for a client without the interceptor, got $notInstalled", notInstalled is IllegalArgumentException)
}

/**
 * OkHttp resends a `503` whose `Retry-After` is `0` by itself, below any application interceptor
 * and whatever `retryOnConnectionFailure` says: the network interceptor hides the header from it.
 */
private fun followUpTests() {
    val unavailable = listOf(Step(503, mapOf("Retry-After" to "0", "X-After" to "1")), Step(201))
    exchange(unavailable, "POST", "/items", json("{}")) { run, server, _ ->
        expect("POST 503 Retry-After 0: arrivals", server.arrivals.size, 1)
        expect("POST 503 Retry-After 0: status", run.status, 503)
        // As the server sent them: the name, its value and its place.
        val sent = run.headers.filter { it.first == "Retry-After" || it.first == "X-After" }
        expect("POST 503 Retry-After 0: the caller sees Retry-After", sent, listOf("Retry-After" to "0", "X-After" to "1"))
        expectFinish("POST 503 Retry-After 0", run, 1, "not_replayable", "status")
        expect("POST 503 Retry-After 0: no redirect", run.finish?.redirects, 0)
    }
    exchange(listOf(Step(503, mapOf("Retry-After" to "0"))), "GET", "/items/7") { run, server, _ ->
        expect("GET 503 Retry-After 0: arrivals", server.arrivals.size, 4)
        expect(
            "GET 503 Retry-After 0: events",
            run.eventPairs(),
            listOf(
                "retryable_status" to 0L,
                "retryable_status" to 0L,
                "retryable_status" to 0L,
            ),
        )
        expectFinish("GET 503 Retry-After 0", run, 4, "exhausted", "status")
    }
    // OkHttp reads a Retry-After beyond Int as a NumberFormatException; hidden, decide reads it.
    exchange(listOf(Step(503, mapOf("Retry-After" to "99999999999")), Step(200)), "POST", "/items", json("{}")) { run, server, _ ->
        expect("503 Retry-After beyond Int: arrivals", server.arrivals.size, 1)
        expectFinish("503 Retry-After beyond Int", run, 1, "not_replayable", "status")
    }
    // OkHttp resends a 421 only from a coalesced HTTP/2 connection; over HTTP/1 it is returned as is.
    exchange(listOf(Step(421), Step(201)), "POST", "/items", json("{}")) { run, server, _ ->
        expect("POST 421: arrivals", server.arrivals.size, 1)
        expect("POST 421: status", run.status, 421)
    }
    // A 307 OkHttp follows below the interceptor is counted in the finish event.
    exchange(listOf(Step(307, mapOf("Location" to "/v1/items")), Step(201)), "POST", "/items", json("{\"r\":1}")) { run, server, _ ->
        expect("POST 307: arrivals", server.arrivals.size, 2)
        expect("POST 307: the body followed", server.arrivals.map { it.body }, listOf("{\"r\":1}", "{\"r\":1}"))
        expectFinish("POST 307", run, 1, "status_not_retryable", "status")
        expect("POST 307: redirects", run.finish?.redirects, 1)
    }
    exchange(
        listOf(Step(307, mapOf("Location" to "/v1/items/7")), Step(503), Step(307, mapOf("Location" to "/v1/items/7")), Step(200)),
        "GET",
        "/items/7",
    ) { run, server, _ ->
        expect("GET 307 503 307 200: arrivals", server.arrivals.size, 4)
        expectFinish("GET 307 503 307 200", run, 2, "status_not_retryable", "status")
        expect("GET 307 503 307 200: redirects over both attempts", run.finish?.redirects, 2)
    }
}

/** Rule 0: a request to another origin than the base URL's is sent once, untouched. */
private fun originTests() {
    TestServer(listOf(Step(503), Step(201))).use { other ->
        TestServer(listOf(Step(200))).use { server ->
            for ((path, method) in listOf("/items" to "POST", "/items/7/snapshots" to "POST", "/items/7" to "GET")) {
                val run = Run()
                val client = interceptor(run, "${server.url}/v1").install(OkHttpClient.Builder()).build()
                val body = if (method == "POST") json("{}") else null
                send(
                    client,
                    Request
                        .Builder()
                        .url("${other.url}/v1$path")
                        .method(method, body)
                        .build(),
                    run,
                )
                expectFinish("other origin $method $path", run, 1, RetryFinish.FOREIGN_ORIGIN, "status")
                expect("other origin $method $path: no event", run.events.size, 0)
                expect("other origin $method $path: no template", run.finish?.pathTemplate, null)
                expect("other origin $method $path: no operation", run.finish?.operationId, null)
                expect("other origin $method $path: method", run.finish?.method, method)
            }
            expect("other origin: one arrival each", other.arrivals.size, 3)
            expect("other origin: no key minted", other.arrivals.map { it.headers["idempotency-key"] }, listOf<String?>(null, null, null))
            expect("base origin: nothing", server.arrivals.size, 0)
        }
    }
    // The same origin written another way (case, default port) is in scope.
    TestServer(listOf(Step(503), Step(200))).use { server ->
        val run = Run()
        val client = interceptor(run, server.url.replace("http://", "HTTP://") + "/v1").install(OkHttpClient.Builder()).build()
        send(client, Request.Builder().url("${server.url}/v1/items/7").build(), run)
        expectFinish("same origin", run, 2, "status_not_retryable", "status")
    }
}

/**
 * A pooled HTTP/1 connection the server closed while it sat idle: OkHttp (retryOnConnectionFailure
 * off) would write the request onto it and lose it; the interceptor finds it closed first.
 */
private fun staleConnectionTests() {
    for ((method, path) in listOf("POST" to "/items", "GET" to "/items/7")) {
        TestServer(listOf(Step(200, action = "answer_then_close"), Step(201))).use { server ->
            val run = Run()
            val retries = interceptor(run, "${server.url}/v1")
            val client = retries.install(OkHttpClient.Builder()).build()
            send(client, Request.Builder().url("${server.url}/v1/items/7").build(), run)
            // The server has closed the pooled connection by the time the next request reuses it.
            Thread.sleep(200)
            run.events.clear()
            run.finishes.clear()
            val body = if (method == "POST") json("{}") else null
            send(
                client,
                Request
                    .Builder()
                    .url("${server.url}/v1$path")
                    .method(method, body)
                    .build(),
                run,
            )
            expect("stale $method: arrivals (warm-up and request)", server.arrivals.size, 2)
            expect("stale $method: no retry", run.events.size, 0)
            expectFinish("stale $method", run, 1, "status_not_retryable", "status")
            expect("stale $method: delivered", run.status, 201)
            expect("stale $method: budget untouched", retries.budgetTokens, 15L)
            client.connectionPool.evictAll()
        }
    }
}

/**
 * A minimal HTTP/2 server with prior knowledge (h2c): arrival n (a complete request stream) gets
 * step min(n, last) of [script]: `refused` (RST_STREAM REFUSED_STREAM), `goaway` (GOAWAY with last
 * stream id 0, then the connection closes), else the status with body `ok`.
 */
private class H2Server(
    private val script: List<Step>,
    tls: SSLContext? = null,
) : AutoCloseable {
    // Over TLS (h2), ALPN offers h2 only.
    private val listener: ServerSocket =
        if (tls == null) {
            ServerSocket(0, 50, InetAddress.getLoopbackAddress())
        } else {
            (tls.serverSocketFactory.createServerSocket(0, 50, InetAddress.getLoopbackAddress()) as SSLServerSocket).apply {
                sslParameters = sslParameters.apply { applicationProtocols = arrayOf("h2") }
            }
        }
    val arrivals: MutableList<String> = Collections.synchronizedList(ArrayList())
    val url: String = "http://127.0.0.1:${listener.localPort}"
    val port: Int = listener.localPort

    init {
        daemon {
            while (true) {
                val socket =
                    try {
                        listener.accept()
                    } catch (e: IOException) {
                        break
                    }
                daemon { runCatching { socket.use { serve(it) } } }
            }
        }
    }

    private fun frame(
        out: OutputStream,
        type: Int,
        flags: Int,
        stream: Int,
        payload: ByteArray,
    ) {
        val n = payload.size
        val head = byteArrayOf((n shr 16).toByte(), (n shr 8).toByte(), n.toByte(), type.toByte(), flags.toByte())
        synchronized(out) {
            out.write(head)
            out.write(intBytes(stream))
            out.write(payload)
            out.flush()
        }
    }

    private fun intBytes(v: Int): ByteArray = byteArrayOf((v shr 24).toByte(), (v shr 16).toByte(), (v shr 8).toByte(), v.toByte())

    private fun serve(socket: Socket) {
        val input = DataInputStream(BufferedInputStream(socket.getInputStream()))
        val out = socket.getOutputStream()
        input.readFully(ByteArray(24))
        frame(out, 4, 0, 0, ByteArray(0))
        while (true) {
            val length = (input.readUnsignedByte() shl 16) or (input.readUnsignedByte() shl 8) or input.readUnsignedByte()
            val type = input.readUnsignedByte()
            val flags = input.readUnsignedByte()
            val stream = input.readInt() and 0x7fffffff
            input.readFully(ByteArray(length))
            if (type == 4 && flags and 1 == 0) {
                frame(out, 4, 1, 0, ByteArray(0))
            }
            // END_STREAM on HEADERS or DATA: the request is complete.
            if ((type == 1 || type == 0) && flags and 1 == 1) {
                val step =
                    synchronized(arrivals) {
                        val s = script[minOf(arrivals.size, script.size - 1)]
                        arrivals += s.action ?: "status"
                        s
                    }
                when (step.action) {
                    "refused" -> {
                        frame(out, 3, 0, stream, intBytes(7))
                    }

                    "goaway" -> {
                        frame(out, 7, 0, 0, intBytes(0) + intBytes(0))
                        Thread.sleep(100)
                        return
                    }

                    else -> {
                        // HPACK: ":status" (static index 8) as a literal without indexing.
                        val status = step.status.toString().toByteArray()
                        frame(out, 1, 4, stream, byteArrayOf(0x08, status.size.toByte()) + status)
                        frame(out, 0, 1, stream, "ok".toByteArray())
                    }
                }
            }
        }
    }

    override fun close() {
        listener.close()
    }
}

/** HTTP/2 refusals the server provably did not process are `connect`: retried for every class. */
private fun refusalTests() {
    for ((refusal, label) in listOf("refused" to "REFUSED_STREAM", "goaway" to "GOAWAY below the stream")) {
        H2Server(listOf(Step(action = refusal), Step(201))).use { server ->
            val run = Run()
            val client =
                interceptor(run, "${server.url}/v1")
                    .install(OkHttpClient.Builder().protocols(listOf(Protocol.H2_PRIOR_KNOWLEDGE)))
                    .build()
            send(
                client,
                Request
                    .Builder()
                    .url("${server.url}/v1/items")
                    .post(json("{}"))
                    .build(),
                run,
            )
            expect("POST $label: status", run.status, 201)
            expect("POST $label: events", run.eventPairs(), listOf("connect_failure" to 1L))
            expectFinish("POST $label", run, 2, "status_not_retryable", "status")
            expect("POST $label: requests seen", server.arrivals, listOf(refusal, "status"))
            client.connectionPool.evictAll()
        }
    }
    // A 421 over HTTP/2 reaches the caller as sent, though it passed OkHttp as another status.
    H2Server(listOf(Step(421), Step(201))).use { server ->
        val run = Run()
        val client =
            interceptor(run, "${server.url}/v1")
                .install(OkHttpClient.Builder().protocols(listOf(Protocol.H2_PRIOR_KNOWLEDGE)))
                .build()
        send(
            client,
            Request
                .Builder()
                .url("${server.url}/v1/items")
                .post(json("{}"))
                .build(),
            run,
        )
        expect("h2 421: status", run.status, 421)
        expect("h2 421: no hidden header", run.headers.filter { it.first.startsWith("retrygen", ignoreCase = true) }, emptyList())
        expectFinish("h2 421", run, 1, "status_not_retryable", "status")
        expect("h2 421: arrivals", server.arrivals.size, 1)
        client.connectionPool.evictAll()
    }
}

/** A self-signed certificate for the DNS names a.test and b.test, made by the JDK's keytool. */
private fun coalescingTls(): Pair<SSLContext, X509TrustManager> {
    val store = File.createTempFile("retrygen-coalesce", ".p12")
    store.delete()
    val keytool = File(System.getProperty("java.home"), "bin/keytool").path
    val made =
        ProcessBuilder(
            keytool,
            "-genkeypair",
            "-keyalg",
            "EC",
            "-groupname",
            "secp256r1",
            "-alias",
            "s",
            "-dname",
            "CN=a.test",
            "-ext",
            "SAN=dns:a.test,dns:b.test",
            "-validity",
            "2",
            "-storetype",
            "PKCS12",
            "-keystore",
            store.path,
            "-storepass",
            "changeit",
            "-keypass",
            "changeit",
        ).redirectErrorStream(true).start()
    made.inputStream.readBytes()
    check(made.waitFor() == 0) { "keytool failed" }
    val keys = KeyStore.getInstance("PKCS12")
    store.inputStream().use { keys.load(it, "changeit".toCharArray()) }
    store.delete()
    val managers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm())
    managers.init(keys, "changeit".toCharArray())
    val server = SSLContext.getInstance("TLS")
    server.init(managers.keyManagers, null, null)
    val trusted = KeyStore.getInstance(KeyStore.getDefaultType())
    trusted.load(null, null)
    trusted.setCertificateEntry("s", keys.getCertificate("s"))
    val trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm())
    trust.init(trusted)
    return server to trust.trustManagers.filterIsInstance<X509TrustManager>().single()
}

/**
 * OkHttp coalesces an HTTP/2 connection to a.test with b.test (same address, a certificate for
 * both) and resends a request answered 421 on it by itself, on a new connection: the network
 * interceptor hides the 421 from it, and the caller still gets it.
 */
private fun coalescedMisdirectedTest() {
    val (serverTls, trust) = coalescingTls()
    H2Server(listOf(Step(200), Step(421), Step(201)), serverTls).use { server ->
        val run = Run()
        val client =
            OkHttpClient
                .Builder()
                .protocols(listOf(Protocol.HTTP_2, Protocol.HTTP_1_1))
                .dns(
                    object : Dns {
                        override fun lookup(hostname: String): List<InetAddress> = listOf(InetAddress.getLoopbackAddress())
                    },
                ).sslSocketFactory(clientTls(trust).socketFactory, trust)
        val installed = interceptor(run, null).install(client).build()
        send(installed, Request.Builder().url("https://a.test:${server.port}/v1/items/7").build(), run)
        expect("coalesced: first request", run.status, 200)
        run.finishes.clear()
        send(
            installed,
            Request
                .Builder()
                .url("https://b.test:${server.port}/v1/items")
                .post(json("{}"))
                .build(),
            run,
        )
        expect("coalesced 421: one connection", installed.connectionPool.connectionCount(), 1)
        expect("coalesced 421: status", run.status, 421)
        expect("coalesced 421: arrivals (the first request and the POST once)", server.arrivals.size, 2)
        expectFinish("coalesced 421", run, 1, "status_not_retryable", "status")
        installed.connectionPool.evictAll()
    }
}

private fun clientTls(trust: X509TrustManager): SSLContext = SSLContext.getInstance("TLS").apply { init(null, arrayOf(trust), null) }

/**
 * A refused server certificate is `certificate`, never retried (R1): an issuer the client does not
 * trust, and a trusted certificate for other names (OkHttp's SSLPeerUnverifiedException).
 */
private fun certificateTests() {
    val (serverTls, trust) = coalescingTls()
    H2Server(listOf(Step(200)), serverTls).use { server ->
        val dns =
            object : Dns {
                override fun lookup(hostname: String): List<InetAddress> = listOf(InetAddress.getLoopbackAddress())
            }
        val untrusted = Run()
        val system = interceptor(untrusted, null).install(OkHttpClient.Builder().dns(dns)).build()
        send(system, Request.Builder().url("https://a.test:${server.port}/v1/items/7").build(), untrusted)
        expectFinish("untrusted certificate", untrusted, 1, "certificate_failure", "certificate")
        val other = Run()
        val trusting =
            interceptor(other, null)
                .install(OkHttpClient.Builder().dns(dns).sslSocketFactory(clientTls(trust).socketFactory, trust))
                .build()
        send(trusting, Request.Builder().url("https://c.test:${server.port}/v1/items/7").build(), other)
        expectTrue("certificate for other names: OkHttp's own exception, got ${other.error}", other.error is SSLPeerUnverifiedException)
        expectFinish("certificate for other names", other, 1, "certificate_failure", "certificate")
        expect("certificates: nothing arrived", server.arrivals.size, 0)
    }
}

/** An onRetry listener that throws ends the request: the response closed, one finish event. */
private fun throwingRetryTest() {
    TestServer(listOf(Step(503), Step(200))).use { server ->
        val finishes = ArrayList<RetryFinish>()
        val retries =
            RetryInterceptor
                .builder(table, policy)
                .baseUrl("${server.url}/v1")
                .onRetry { throw IllegalStateException("retry listener") }
                .onFinish { finishes += it }
                .build()
        val client = retries.install(OkHttpClient.Builder()).build()
        val run = Run()
        send(client, Request.Builder().url("${server.url}/v1/items/7").build(), run)
        expect("throwing onRetry: thrown to the caller", run.error?.message, "retry listener")
        expect("throwing onRetry: one arrival", server.arrivals.size, 1)
        expect("throwing onRetry: one finish event", finishes.map { it.attempts to it.reason }, listOf(1 to "retryable_status"))
        val pool = client.connectionPool
        expect("throwing onRetry: no connection left allocated", pool.connectionCount() - pool.idleConnectionCount(), 0)
        pool.evictAll()
    }
}

/**
 * A client whose retryOnConnectionFailure was set back to true after install: OkHttp would resend
 * a POST that failed on a pooled connection; the network interceptor refuses the resend.
 */
private fun replayBackstopTest() {
    TestServer(listOf(Step(200), Step(action = "reset"), Step(201))).use { server ->
        val run = Run()
        val installed = interceptor(run, "${server.url}/v1").install(OkHttpClient.Builder()).build()
        val client = installed.newBuilder().retryOnConnectionFailure(true).build()
        send(client, Request.Builder().url("${server.url}/v1/items/7").build(), run)
        send(
            client,
            Request
                .Builder()
                .url("${server.url}/v1/items")
                .post(json("{}"))
                .build(),
            run,
        )
        expect("replay backstop: the POST arrived once (after the warm-up)", server.arrivals.map { it.method }, listOf("GET", "POST"))
        expectTrue("replay backstop: refused, got ${run.error}", run.error is IllegalStateException)
        client.connectionPool.evictAll()
    }
}

/** A throwing onFinish must not leak the connection of the response the caller never gets. */
private fun throwingFinishTest() {
    TestServer(listOf(Step(200))).use { server ->
        val retries =
            RetryInterceptor
                .builder(table, policy)
                .baseUrl("${server.url}/v1")
                .onFinish { throw IllegalStateException("listener") }
                .build()
        val client = retries.install(OkHttpClient.Builder()).build()
        val run = Run()
        send(client, Request.Builder().url("${server.url}/v1/items/7").build(), run)
        expectTrue("throwing onFinish: thrown to the caller, got ${run.error}", run.error?.message == "listener")
        // A leaked response keeps its connection allocated: counted, but never idle.
        val pool = client.connectionPool
        expect("throwing onFinish: no connection left allocated", pool.connectionCount() - pool.idleConnectionCount(), 0)
        pool.evictAll()
    }
}

private fun setupTests() {
    TestServer(listOf(Step(200))).use { server ->
        val request = Request.Builder().url("${server.url}/v1/items/7").build()
        val run = Run()
        // Added by hand: retryOnConnectionFailure is still OkHttp's default, true.
        val plain = OkHttpClient.Builder().addInterceptor(interceptor(run, null)).build()
        send(plain, request, run)
        expectTrue("replaying client: refused, got ${run.error}", run.error is IllegalStateException)
        expectTrue("replaying client: says why", run.error?.message?.contains("retryOnConnectionFailure(false)") == true)
        expect("replaying client: nothing sent", server.arrivals.size, 0)
        val network = Run()
        val client =
            OkHttpClient
                .Builder()
                .retryOnConnectionFailure(false)
                .addNetworkInterceptor(interceptor(network, null))
                .build()
        send(client, request, network)
        expectTrue("network interceptor: refused, got ${network.error}", network.error is IllegalStateException)
    }
    val bad =
        runCatching { RetryInterceptor.builder(table, policy.newBuilder().multiplier(Double.NaN).build()).build() }.exceptionOrNull()
    expect("bad policy: checked when built", (bad as? RetryInputException)?.key, "policy.multiplier")
    val zero = runCatching { RetryInterceptor.builder(table, policy).attemptTimeout(Duration.ZERO).build() }.exceptionOrNull()
    expectTrue("zero attempt timeout: refused, got $zero", zero is IllegalArgumentException)
    expect("budget starts full", RetryInterceptor.builder(table, policy).build().budgetTokens, RetryRuntime.budgetNew(policy))
    expect("finish reason names", DecisionReason.ABORTED.wireName, "aborted")
}

/** What a streamed call gave: the finish before and after the body, the body or its read error. */
private class Streamed {
    val run: Run = Run()

    // The call, for a reader that cancels it.
    var call: Call? = null
    var finishBeforeBody: RetryFinish? = null
    var finishAfterBody: RetryFinish? = null
    var bodyError: IOException? = null
}

/** Reads [response]'s whole body as text into [streamed]. */
private fun readAll(
    response: Response,
    streamed: Streamed,
) {
    val body: ResponseBody? = response.body
    try {
        streamed.run.body = body?.string()
    } catch (e: IOException) {
        streamed.bodyError = e
    }
}

/** One streamed request through a fresh client with the interceptor installed; [read] reads the body. */
private fun streamExchange(
    script: List<Step>,
    method: String,
    path: String,
    body: RequestBody? = null,
    headers: Map<String, String> = emptyMap(),
    attemptTimeout: Duration? = null,
    withPolicy: RetryPolicy = policy,
    read: (Response, Streamed) -> Unit = ::readAll,
    check: (Streamed, TestServer) -> Unit,
) {
    TestServer(script).use { server ->
        val streamed = Streamed()
        val run = streamed.run
        val retries = interceptor(run, "${server.url}/v1", attemptTimeout = attemptTimeout, withPolicy = withPolicy)
        val client = retries.install(OkHttpClient.Builder()).build()
        val request = Request.Builder().url("${server.url}/v1$path").method(method, body)
        headers.forEach { (name, value) -> request.header(name, value) }
        val started = System.nanoTime()
        try {
            val call = client.newCall(request.build())
            streamed.call = call
            val response = call.execute()
            run.status = response.code
            streamed.finishBeforeBody = RetryInterceptor.finishOf(response)
            response.use { read(it, streamed) }
            streamed.finishAfterBody = RetryInterceptor.finishOf(response)
        } catch (e: IOException) {
            run.error = e
        }
        run.elapsedMs = (System.nanoTime() - started) / 1_000_000
        check(streamed, server)
        client.connectionPool.evictAll()
    }
}

/** [contract X4] a resumable stream's one finish, reported when the stream ended for the caller. */
private fun expectStreamFinish(
    what: String,
    streamed: Streamed,
    attempts: Int,
    reason: String,
    outcome: String,
    status: Int? = 200,
) {
    val run = streamed.run
    expect("$what: one finish event", run.finishes.size, 1)
    val finish = run.finish ?: return
    expect("$what: attempts", finish.attempts, attempts)
    expect("$what: reason", finish.reason, reason)
    expect("$what: outcome", finish.outcome, outcome)
    expect("$what: status", finish.status, status)
    expect("$what: no finish before the stream ended", streamed.finishBeforeBody, null)
    expect("$what: finish on the response after the stream", streamed.finishAfterBody, finish)
    expect("$what: the call returned the response", run.error, null)
}

private fun event(
    id: Int,
    data: String = "line $id",
): String = "id: $id\ndata: $data\n\n"

/** Contract v3 X1-X4: committed streams, complete events, resumes with Last-Event-ID. */
private fun streamTests() {
    // [X2, X3] A drop after two events and a partial third: the caller gets complete events only,
    // the resume carries Last-Event-ID 2, and the caller reads one continuous stream.
    val dropped = Step(sse = listOf(event(1), event(2), "id: 3\ndata: par"), drop = true)
    val rest = Step(sse = listOf(event(3), event(4)))
    streamExchange(listOf(dropped, rest), "GET", "/items/7/events") { streamed, server ->
        expect("resumed GET: arrivals", server.arrivals.size, 2)
        expect("resumed GET: Last-Event-ID", server.arrivals.map { it.headers["last-event-id"] }, listOf(null, "2"))
        expect("resumed GET: body", streamed.run.body, event(1) + event(2) + event(3) + event(4))
        expect("resumed GET: events", streamed.run.eventPairs(), listOf("stream_resume" to 1L))
        expect("resumed GET: the event's failure", streamed.run.events.map { it.failure }, listOf<String?>("dropped"))
        expectStreamFinish("resumed GET", streamed, 2, "status_not_retryable", "status")
    }
    // A non-replayable POST resumes with an id (its server declared it continues the stream).
    val post = listOf(Step(sse = listOf(event(1), event(2)), drop = true), Step(sse = listOf(event(3))))
    streamExchange(post, "POST", "/items/7/runs", json("{\"cmd\":1}")) { streamed, server ->
        expect("resumed POST: arrivals", server.arrivals.size, 2)
        expect("resumed POST: the same body", server.arrivals.map { it.body }, listOf("{\"cmd\":1}", "{\"cmd\":1}"))
        expect("resumed POST: Last-Event-ID", server.arrivals.map { it.headers["last-event-id"] }, listOf(null, "2"))
        expect("resumed POST: body", streamed.run.body, event(1) + event(2) + event(3))
        expectStreamFinish("resumed POST", streamed, 2, "status_not_retryable", "status")
    }
    // ... but never without one: that would replay it whole.
    val noIds = listOf(Step(sse = listOf("data: a\n\n"), drop = true), Step(sse = listOf("data: b\n\n")))
    streamExchange(noIds, "POST", "/items/7/runs", json("{}")) { streamed, server ->
        expect("POST without ids: once", server.arrivals.size, 1)
        expectTrue("POST without ids: the caller's read fails, got ${streamed.bodyError}", streamed.bodyError != null)
        expect("POST without ids: no event", streamed.run.events.size, 0)
        expectStreamFinish("POST without ids", streamed, 1, "stream_not_resumable", "status")
        expect("POST without ids: the finish on the error", streamed.bodyError?.let(RetryInterceptor::finishOf), streamed.run.finish)
    }
    // The caller's own Last-Event-ID is where the stream starts.
    streamExchange(noIds, "POST", "/items/7/runs", json("{}"), mapOf("Last-Event-ID" to "7")) { streamed, server ->
        expect("caller's Last-Event-ID: arrivals", server.arrivals.size, 2)
        expect("caller's Last-Event-ID: kept", server.arrivals.map { it.headers["last-event-id"] }, listOf("7", "7"))
        expect("caller's Last-Event-ID: body", streamed.run.body, "data: a\n\ndata: b\n\n")
    }
    // [S9] The stream's retry field is the resume's delay.
    val retryField = listOf(Step(sse = listOf("retry: 300\n" + event(1)), drop = true), Step(sse = listOf(event(2))))
    streamExchange(retryField, "GET", "/items/7/events") { streamed, server ->
        expect("retry field: arrivals", server.arrivals.size, 2)
        expect("retry field: events", streamed.run.eventPairs(), listOf("stream_resume" to 300L))
        expectTrue("retry field: waited, ${streamed.run.elapsedMs} ms", streamed.run.elapsedMs >= 300)
        expect("retry field: body", streamed.run.body, "retry: 300\n" + event(1) + event(2))
        expect("retry field: slept", streamed.run.finish?.totalDelayMs, 300L)
    }
    // [A7] Drops without progress stop after maxRetries resumes; progress counts them again.
    val stuck = listOf(Step(sse = listOf("id: 1\ndata: never ends"), drop = true))
    streamExchange(stuck, "GET", "/items/7/events") { streamed, server ->
        expect("no progress: arrivals", server.arrivals.size, 4)
        expect("no progress: events", streamed.run.eventPairs(), List(3) { "stream_resume" to (1L shl it) })
        expect("no progress: nothing complete", streamed.bodyError != null, true)
        expectStreamFinish("no progress", streamed, 4, "exhausted", "status")
    }
    val progress = (1..5).map { Step(sse = listOf(event(it)), drop = true) } + Step(sse = listOf(event(6)))
    val unbudgeted = policy.newBuilder().budgetCapacity(0).build()
    streamExchange(progress, "GET", "/items/7/events", withPolicy = unbudgeted) { streamed, server ->
        expect("progress: arrivals", server.arrivals.size, 6)
        expect("progress: Last-Event-ID", server.arrivals.map { it.headers["last-event-id"] }, listOf(null, "1", "2", "3", "4", "5"))
        expect("progress: every delay the first", streamed.run.eventPairs(), List(5) { "stream_resume" to 1L })
        expect("progress: body", streamed.run.body, (1..6).joinToString("") { event(it) })
        expectStreamFinish("progress", streamed, 6, "status_not_retryable", "status")
    }
    // [A6] A resume answered with anything but a 2xx event stream ends the caller's stream with it.
    streamExchange(listOf(dropped, Step(503)), "GET", "/items/7/events") { streamed, server ->
        expect("resume 503: arrivals", server.arrivals.size, 2)
        expect("resume 503: the status on the read error", (streamed.bodyError as? StreamResumeException)?.status, 503)
        expectStreamFinish("resume 503", streamed, 2, "stream_not_resumable", "status", 503)
    }
    // [X2] An event over 1 MiB ends resumability: a later drop is the caller's, as in v2.
    val huge = "data: " + "x".repeat(1_200_000) + "\n\n"
    streamExchange(listOf(Step(sse = listOf(event(1), huge, "id: 3\n"), drop = true), rest), "GET", "/items/7/events") { streamed, server ->
        expect("huge event: once", server.arrivals.size, 1)
        expectTrue("huge event: the caller's read fails", streamed.bodyError != null)
        expectStreamFinish("huge event", streamed, 1, "stream_not_resumable", "status")
    }
    // [X1] The attempt timeout ends at the commit: pauses longer than it do not cut the stream.
    val slow = listOf(Step(sse = listOf(event(1), event(2), event(3)), ms = 400))
    for (path in listOf("/items/7/events", "/items/7/metrics")) {
        streamExchange(slow, "GET", path, attemptTimeout = Duration.ofMillis(150)) { streamed, server ->
            expect("slow stream $path: arrivals", server.arrivals.size, 1)
            expect("slow stream $path: body", streamed.run.body, event(1) + event(2) + event(3))
            expect("slow stream $path: events", streamed.run.events.size, 0)
        }
    }
    // ... while it still ends an attempt whose head is late: retried before the commit.
    streamExchange(
        listOf(Step(action = "stall", ms = 600), Step(sse = listOf(event(1)))),
        "GET",
        "/items/7/events",
        attemptTimeout = Duration.ofMillis(150),
    ) {
        streamed,
        server,
        ->
        expect("late head: arrivals", server.arrivals.size, 2)
        expect("late head: events", streamed.run.eventPairs(), listOf("transport_failure" to 1L))
        expect("late head: body", streamed.run.body, event(1))
    }
    // [X4] A stream that is not resumable: the body untouched, the finish at the commit.
    streamExchange(
        listOf(Step(sse = listOf(event(1), "id: 2\ndata: par"), drop = true), rest),
        "GET",
        "/items/7/metrics",
    ) { streamed, server ->
        val run = streamed.run
        expect("not resumable: once", server.arrivals.size, 1)
        expectTrue("not resumable: the caller's read fails", streamed.bodyError != null)
        expect("not resumable: one finish", run.finishes.size, 1)
        expect("not resumable: finish at the commit", streamed.finishBeforeBody, run.finish)
        expect("not resumable: reason", run.finish?.reason, "status_not_retryable")
    }
    // [X4] The caller closing the body while reading (the server holds the stream open after two
    // events) ends the stream at once: outcome status 200, reason aborted, nothing resumed.
    val held = listOf(Step(sse = listOf(event(1), event(2)), hold = 3000), Step(sse = listOf(event(3))))
    val readTwoThenClose: (Response, Streamed) -> Unit = { response, streamed ->
        val nullable: ResponseBody? = response.body
        val body = checkNotNull(nullable)
        streamed.run.body = List(6) { body.source().readUtf8Line() }.joinToString("\n")
        expect("closed while reading: no finish while open", streamed.run.finishes.size, 0)
        body.close()
        // A second close (response.use's) gives no second finish.
    }
    streamExchange(held, "GET", "/items/7/events", read = readTwoThenClose) { streamed, server ->
        expect("closed while reading: arrivals", server.arrivals.size, 1)
        expect("closed while reading: what was read", streamed.run.body, "id: 1\ndata: line 1\n\nid: 2\ndata: line 2\n")
        expect("closed while reading: no retry event", streamed.run.events.size, 0)
        expectStreamFinish("closed while reading", streamed, 1, "aborted", "status")
        expectTrue("closed while reading: not held, ${streamed.run.elapsedMs} ms", streamed.run.elapsedMs < 2000)
    }
    // [X4] Call.cancel() while reading ends it the same way; the caller's read fails, the finish on it.
    val cancelWhileReading: (Response, Streamed) -> Unit = { response, streamed ->
        val nullable: ResponseBody? = response.body
        val source = checkNotNull(nullable).source()
        streamed.run.body = source.readUtf8Line()
        val canceller = Executors.newSingleThreadScheduledExecutor()
        // The read after event 2 waits on the held stream when the cancel comes.
        canceller.schedule({ streamed.call?.cancel() }, 300, TimeUnit.MILLISECONDS)
        try {
            while (source.readUtf8Line() != null) {
                // Reads on until the cancel fails the read.
            }
        } catch (e: IOException) {
            streamed.bodyError = e
        }
        canceller.shutdown()
        canceller.awaitTermination(5, TimeUnit.SECONDS)
    }
    streamExchange(held, "GET", "/items/7/events", read = cancelWhileReading) { streamed, server ->
        expect("cancelled while reading: arrivals", server.arrivals.size, 1)
        expectTrue("cancelled while reading: the read fails", streamed.bodyError != null)
        expectStreamFinish("cancelled while reading", streamed, 1, "aborted", "status")
        expect("cancelled while reading: the finish on the error", streamed.bodyError?.let(RetryInterceptor::finishOf), streamed.run.finish)
        expectTrue("cancelled while reading: not held, ${streamed.run.elapsedMs} ms", streamed.run.elapsedMs < 2000)
    }
    // [X4] ... and while reading a resumed response, whose call (a clone) the cancel does not
    // reach: the next read ends the stream, with the two sends counted.
    val resumedSlow = listOf(Step(sse = listOf(event(1)), drop = true), Step(sse = listOf(event(2), event(3), event(4)), ms = 300))
    val cancelAfterResume: (Response, Streamed) -> Unit = { response, streamed ->
        val nullable: ResponseBody? = response.body
        val source = checkNotNull(nullable).source()
        val lines = ArrayList<String>()
        try {
            while (true) {
                val line = source.readUtf8Line() ?: break
                lines += line
                if (line == "id: 2") {
                    streamed.call?.cancel()
                }
            }
        } catch (e: IOException) {
            streamed.bodyError = e
        }
        streamed.run.body = lines.joinToString("\n")
    }
    streamExchange(resumedSlow, "GET", "/items/7/events", read = cancelAfterResume) { streamed, server ->
        expect("cancelled after a resume: arrivals", server.arrivals.size, 2)
        expect("cancelled after a resume: read up to event 2", streamed.run.body, "id: 1\ndata: line 1\n\nid: 2\ndata: line 2\n")
        expectTrue("cancelled after a resume: the read fails", streamed.bodyError != null)
        expectStreamFinish("cancelled after a resume", streamed, 2, "aborted", "status")
    }
    // [X3] Call.cancel() while a resume is sent (its answer late): the call ends aborted, the
    // answer unread.
    val lateResume = listOf(Step(sse = listOf(event(1)), drop = true), Step(action = "stall", ms = 800, sse = listOf(event(2))))
    streamExchange(lateResume, "GET", "/items/7/events", read = { response, streamed ->
        val nullable: ResponseBody? = response.body
        val source = checkNotNull(nullable).source()
        streamed.run.body = source.readUtf8Line()
        val canceller = Executors.newSingleThreadScheduledExecutor()
        // The drop comes 150 ms after event 1, the resume at once; its answer 800 ms later.
        canceller.schedule({ streamed.call?.cancel() }, 450, TimeUnit.MILLISECONDS)
        try {
            while (source.readUtf8Line() != null) {
                // Reads on until the cancel fails the read.
            }
        } catch (e: IOException) {
            streamed.bodyError = e
        }
        canceller.shutdown()
        canceller.awaitTermination(5, TimeUnit.SECONDS)
    }) { streamed, server ->
        expect("cancelled during a resume's send: arrivals", server.arrivals.size, 2)
        expectTrue("cancelled during a resume's send: the read fails", streamed.bodyError != null)
        expectStreamFinish("cancelled during a resume's send", streamed, 2, "aborted", "aborted", null)
    }
    // [X3] The caller closing the body during a resume's delay ends the call aborted, unsent.
    val slowResume = listOf(Step(sse = listOf("retry: 1000\n" + event(1)), drop = true), rest)
    val closeDuringDelay: (Response, Streamed) -> Unit = { response, streamed ->
        val nullable: ResponseBody? = response.body
        val body = checkNotNull(nullable)
        val source = body.source()
        streamed.run.body = source.readUtf8Line()
        val closer = Executors.newSingleThreadScheduledExecutor()
        // The drop comes 150 ms after the event; the delay then runs 1000 ms.
        closer.schedule({ body.close() }, 500, TimeUnit.MILLISECONDS)
        try {
            while (source.readUtf8Line() != null) {
                // Reads on until the close fails the read.
            }
        } catch (e: IOException) {
            streamed.bodyError = e
        }
        closer.shutdown()
        closer.awaitTermination(5, TimeUnit.SECONDS)
        // Past the delay's end: no resume may be sent after the close.
        Thread.sleep(1000)
    }
    streamExchange(slowResume, "GET", "/items/7/events", read = closeDuringDelay) { streamed, server ->
        expect("closed during the delay: arrivals", server.arrivals.size, 1)
        expect("closed during the delay: events", streamed.run.eventPairs(), listOf("stream_resume" to 1000L))
        expectTrue("closed during the delay: the read fails", streamed.bodyError != null)
        expectStreamFinish("closed during the delay", streamed, 1, "aborted", "aborted", null)
    }
    // Lines ended by CR alone: the last event is complete at the body's end.
    val cr = "id: 1\rdata: a\r\rid: 2\rdata: b\r\r"
    streamExchange(listOf(Step(sse = listOf(cr))), "GET", "/items/7/events") { streamed, _ ->
        expect("CR line ends: body", streamed.run.body, cr)
        expectStreamFinish("CR line ends", streamed, 1, "status_not_retryable", "status")
    }
    // A byte order mark starts the caller's stream; a resumed response's is dropped.
    val bom = "\uFEFF"
    // Read as bytes: OkHttp's string() would skip a leading mark itself.
    val bytes: (Response, Streamed) -> Unit = { response, streamed ->
        val body: ResponseBody? = response.body
        streamed.run.body = body?.bytes()?.toString(Charsets.UTF_8)
    }
    val marked = listOf(Step(sse = listOf(bom + event(1)), drop = true), Step(sse = listOf(bom + event(2))))
    streamExchange(marked, "GET", "/items/7/events", read = bytes) { streamed, _ ->
        expect("byte order marks: body", streamed.run.body, bom + event(1) + event(2))
    }
}

/**
 * [contract X3, K3] A resumable stream's budget: the commit's 2xx event stream is a success when it
 * arrives (the refund, no retry before it), the resume is paid for when granted and earned back
 * when its 2xx event stream arrives, and the stream's end (clean, or the caller closing the body)
 * records nothing more. One client, so one budget cell, after a GET that spent three retries.
 */
private fun streamBudgetTest() {
    val budgeted =
        policy
            .newBuilder()
            .budgetCapacity(20)
            .budgetRetryCost(5)
            .budgetTimeoutCost(10)
            .budgetSuccessRefund(1)
            .maxRetries(3)
            .initialBackoffMs(1)
            .maxBackoffMs(1)
            .build()
    for (closeAfterEvent2 in listOf(false, true)) {
        val what = if (closeAfterEvent2) "stream budget, closed after event 2" else "stream budget"
        // The resume's answer ends cleanly, or is held open while the caller closes the body.
        val resumed = Step(sse = listOf(event(2)), hold = if (closeAfterEvent2) 3000 else 0)
        val script = List(4) { Step(503) } + Step(sse = listOf(event(1)), drop = true) + resumed
        TestServer(script).use { server ->
            val run = Run()
            val tokensAtRetry = Collections.synchronizedList(ArrayList<Long>())
            lateinit var retries: RetryInterceptor
            retries =
                RetryInterceptor
                    .builder(table, budgeted)
                    .baseUrl("${server.url}/v1")
                    .onRetry {
                        run.events += it
                        tokensAtRetry += retries.budgetTokens
                    }.onFinish { run.finishes += it }
                    .build()
            val client = retries.install(OkHttpClient.Builder()).build()
            // 1. 503 four times: three retries granted (20 -> 15 -> 10 -> 5), no success.
            client.newCall(Request.Builder().url("${server.url}/v1/items/7").build()).execute().use {
                expect("$what: the GET's status", it.code, 503)
            }
            expect("$what: the GET's retries paid", tokensAtRetry.toList(), listOf(15L, 10L, 5L))
            expect("$what: after the GET", retries.budgetTokens, 5L)
            // 2. The resumable stream on the same client.
            val response = client.newCall(Request.Builder().url("${server.url}/v1/items/7/events").build()).execute()
            expect("$what: after the commit (the refund)", retries.budgetTokens, 6L)
            val nullable: ResponseBody? = response.body
            val body = checkNotNull(nullable)
            val source = body.source()
            val lines = ArrayList<String>()
            try {
                while (true) {
                    val line = source.readUtf8Line() ?: break
                    lines += line
                    if (line == "id: 2") {
                        expect("$what: after the resume's answer", retries.budgetTokens, 6L)
                        if (closeAfterEvent2) {
                            lines += checkNotNull(source.readUtf8Line())
                            lines += checkNotNull(source.readUtf8Line())
                            body.close()
                            break
                        }
                    }
                }
            } catch (e: IOException) {
                failures += "$what: the read failed: $e"
            }
            response.close()
            expect("$what: events read", lines.joinToString("\n", postfix = "\n"), event(1) + event(2))
            expect("$what: the resume granted at 1", tokensAtRetry.toList(), listOf(15L, 10L, 5L, 1L))
            expect("$what: Last-Event-ID", server.arrivals.map { it.headers["last-event-id"] }, listOf(null, null, null, null, null, "1"))
            expect("$what: finishes", run.finishes.size, 2)
            val finish = run.finishes.lastOrNull()
            expect("$what: the stream's finish", finish?.reason, if (closeAfterEvent2) "aborted" else "status_not_retryable")
            expect("$what: the stream's attempts", finish?.attempts, 2)
            expect("$what: after the stream's end and its finish", retries.budgetTokens, 6L)
            client.connectionPool.evictAll()
        }
    }
}

private const val QUOTA = "https://iana.org/assignments/http-problem-types#quota-exceeded"

/** Contract v3 X5-X8: preconditions, problem types, the key's format, the server's refused wait. */
private fun v3RequestTests() {
    // [X5] A conditional POST is replayable: a 412 after the replay says an earlier attempt applied.
    exchange(listOf(Step(action = "reset"), Step(412)), "POST", "/items", json("{}"), mapOf("If-Match" to "\"v1\"")) { run, server, _ ->
        expect("If-Match POST: arrivals", server.arrivals.size, 2)
        expect("If-Match POST: events", run.eventPairs(), listOf("transport_failure" to 1L))
        expectFinish("If-Match POST", run, 2, "precondition_failed_after_replay", "status")
    }
    exchange(listOf(Step(action = "reset"), Step(412)), "POST", "/items", json("{}"), mapOf("If-None-Match" to "*")) { run, server, _ ->
        expect("If-None-Match * POST: arrivals", server.arrivals.size, 2)
        expectFinish("If-None-Match * POST", run, 2, "precondition_failed_after_replay", "status")
    }
    // If-Match: * holds again after the change: no precondition, one attempt.
    exchange(listOf(Step(action = "reset"), Step(412)), "POST", "/items", json("{}"), mapOf("If-Match" to "*")) { run, server, _ ->
        expect("If-Match * POST: arrivals", server.arrivals.size, 1)
        expectFinish("If-Match * POST", run, 1, "not_replayable", "transport")
    }
    // On the first attempt a 412 goes through the other rules.
    exchange(listOf(Step(412)), "PUT", "/items/7", json("{}"), mapOf("If-Match" to "\"v1\"")) { run, server, _ ->
        expect("first 412: arrivals", server.arrivals.size, 1)
        expectFinish("first 412", run, 1, "status_not_retryable", "status")
    }
    // [X6] A quota problem stops a 429 that would be retried; the body is handed over whole.
    val problem = "{\"type\":\"$QUOTA\",\"status\":429}"
    val problemJson = mapOf("Content-Type" to "application/problem+json; charset=utf-8")
    exchange(listOf(Step(429, problemJson, body = problem), Step(200)), "GET", "/items/7") { run, server, _ ->
        expect("quota 429: arrivals", server.arrivals.size, 1)
        expect("quota 429: body intact", run.body, problem)
        expectFinish("quota 429", run, 1, "problem_type_stop", "status")
    }
    // The same type as another media type is not read: the 429 is retried.
    exchange(
        listOf(Step(429, mapOf("Content-Type" to "application/json"), body = problem), Step(200)),
        "GET",
        "/items/7",
    ) { run, server, _ ->
        expect("quota as application/json: arrivals", server.arrivals.size, 2)
        expectFinish("quota as application/json", run, 2, "status_not_retryable", "status")
    }
    // Longer than 65536 bytes: a prefix has no problem type, and the caller reads it all.
    val long = "{\"type\":\"$QUOTA\",\"detail\":\"" + "x".repeat(70_000) + "\"}"
    exchange(listOf(Step(400, problemJson, body = long)), "GET", "/items/7") { run, server, _ ->
        expect("long problem: arrivals", server.arrivals.size, 1)
        expect("long problem: body intact", run.body, long)
        expectFinish("long problem", run, 1, "status_not_retryable", "status")
    }
    // A problem type that retries, on a status no list names.
    val retryTypes = policy.newBuilder().retryProblemTypes(listOf("urn:retry-me")).build()
    val retryMe = Step(400, problemJson, body = "{\"type\":\"urn:retry-me\"}")
    exchange(listOf(retryMe, Step(200)), "GET", "/items/7", withPolicy = retryTypes) { run, server, _ ->
        expect("retry problem: arrivals", server.arrivals.size, 2)
        expect("retry problem: events", run.eventPairs(), listOf("problem_type_retry" to 1L))
    }
    // Not for a request that is not replayable.
    exchange(listOf(retryMe, Step(200)), "POST", "/items", json("{}"), withPolicy = retryTypes) { run, server, _ ->
        expect("retry problem POST: arrivals", server.arrivals.size, 1)
        expectFinish("retry problem POST", run, 1, "status_not_retryable", "status")
    }
    // Both lists empty: nothing is read, the 429 is retried as v2 did.
    val noTypes = policy.newBuilder().stopProblemTypes(emptyList()).build()
    exchange(listOf(Step(429, problemJson, body = problem), Step(200)), "GET", "/items/7", withPolicy = noTypes) { _, server, _ ->
        expect("no problem lists: arrivals", server.arrivals.size, 2)
    }
    // A problem body cut while it is read: that attempt's transport failure, retried for a GET.
    val cut = Step(429, problemJson, action = "close_after_headers", body = problem)
    exchange(listOf(cut, Step(200)), "GET", "/items/7") { run, server, _ ->
        expect("problem body cut: arrivals", server.arrivals.size, 2)
        expect("problem body cut: events", run.eventPairs(), listOf("transport_failure" to 1L))
        expectFinish("problem body cut", run, 2, "status_not_retryable", "status")
    }
    // [X7] A minted key as an RFC 9651 String when the policy says sf-string.
    val sf = policy.newBuilder().idempotencyKeyFormat(IdempotencyKeyFormat.SF_STRING).build()
    exchange(listOf(Step(503), Step(201)), "POST", "/items/7/snapshots", json("{}"), withPolicy = sf) { _, server, _ ->
        val keys = server.arrivals.map { it.headers["idempotency-key"] }
        expect("sf-string key: arrivals", keys.size, 2)
        expect("sf-string key: one key", keys.distinct().size, 1)
        val key = keys.firstOrNull() ?: ""
        expectTrue("sf-string key: a quoted UUID v4, got $key", key.startsWith("\"") && key.endsWith("\"") && uuidV4.matches(key.trim('"')))
    }
    // [X8] The refused server delay on the finish event; null for every other finish.
    exchange(listOf(Step(503, mapOf("Retry-After" to "120")), Step(200)), "GET", "/items/7") { run, server, _ ->
        expect("over cap: arrivals", server.arrivals.size, 1)
        expectFinish("over cap", run, 1, "retry_after_over_cap", "status")
        expect("over cap: server delay", run.finish?.serverDelayMs, 120_000L)
    }
    exchange(listOf(Step(503, mapOf("Retry-After" to "0")), Step(200)), "GET", "/items/7") { run, _, _ ->
        expect("under cap: no server delay", run.finish?.serverDelayMs, null)
    }
}

public fun main() {
    v3RequestTests()
    streamTests()
    streamBudgetTest()
    statusTests()
    failureTests()
    connectTimeoutTest()
    keyTests()
    bodyTests()
    timeoutTests()
    cancelTests()
    callTests()
    followUpTests()
    originTests()
    staleConnectionTests()
    refusalTests()
    coalescedMisdirectedTest()
    certificateTests()
    throwingRetryTest()
    replayBackstopTest()
    throwingFinishTest()
    setupTests()
    valueTypeTests()
    settledStatusTests()
    overrideTests()
    attemptTests()
    eventFactTests()
    finishOnResultTests()
    readBodyTests()
    dispatcherTests()
    callFactoryTests()
    if (failures.isNotEmpty()) {
        failures.forEach { System.err.println("FAIL $it") }
        System.err.println("${failures.size} of $checks checks failed")
        exitProcess(1)
    }
    println("kotlin okhttp adapter: $checks checks pass")
}
