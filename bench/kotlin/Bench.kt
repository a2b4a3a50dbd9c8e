// Matching bench for the generated Kotlin module (see bench/README.md).
// Run as: java -cp <classes>:<kotlin-stdlib> BenchKt MIXFILE WARM_MS MIN_MS SAMPLES
// Compiled together with the module (RetryPolicies.kt, RetryRuntime.kt) rendered with default
// options (package retrygen.generated).

import retrygen.generated.Operation
import retrygen.generated.ReplayClass
import retrygen.generated.RetryPolicies
import java.io.File
import java.lang.management.ManagementFactory
import java.util.IdentityHashMap
import kotlin.system.exitProcess

// The baseline: [method, anchored regex] pairs of every operation, in table order.
private val methods: Array<String> = RetryPolicies.OPERATIONS.map { it.method }.toTypedArray()
private val patterns: Array<Regex> = RetryPolicies.OPERATIONS.map { plainPattern(it.route) }.toTypedArray()

/**
 * The expression SDKs write by hand today (and retrygen's v1 list carried): the route's literal
 * text as written, syntax characters escaped, `[^/]+` per parameter, one optional trailing slash.
 * The module's own `Operation.pattern` is contract v2's safe-list expression, slower by design
 * (every literal character also matches its percent-encoding), so it would flatter `classify`.
 */
private fun plainPattern(route: String): Regex {
    val rest = route.removePrefix("/").removeSuffix("/")
    if (rest.isEmpty()) {
        return Regex("^/$")
    }
    val out = StringBuilder("^")
    for (segment in rest.split('/')) {
        out.append('/')
        var i = 0
        while (i < segment.length) {
            val c = segment[i]
            val close = if (c == '{') segment.indexOf('}', i) else -1
            if (close > i) {
                out.append("[^/]+")
                i = close + 1
                continue
            }
            if (c in "\\.+*?()|[]{}^$") {
                out.append('\\')
            }
            out.append(c)
            i++
        }
    }
    return Regex(out.append("/?$").toString())
}

private val queryStart = charArrayOf('?', '#')

private fun scan(method: String, requestPath: String): Int {
    var path = requestPath
    val cut = path.indexOfAny(queryStart)
    if (cut >= 0) {
        path = path.substring(0, cut)
    }
    val base = RetryPolicies.BASE_PATH
    if (base.isNotEmpty() && path.startsWith(base) && (path.length == base.length || path[base.length] == '/')) {
        path = path.substring(base.length)
    }
    for (i in methods.indices) {
        if (methods[i] == method && patterns[i].matches(path)) {
            return i
        }
    }
    return -1
}

private fun letter(c: ReplayClass): Char = when (c) {
    ReplayClass.IDEMPOTENT -> 'i'
    ReplayClass.KEYED -> 'k'
    ReplayClass.NON_REPLAYABLE -> 'n'
    ReplayClass.NO_RETRY -> 'r'
}

/** Warms up, then doubles the passes until one measurement lasts [minMs]. */
private fun calibrate(warmMs: Long, minMs: Long, run: () -> Unit): Int {
    val start = System.nanoTime()
    run()
    while (System.nanoTime() - start < warmMs * 1_000_000) {
        run()
    }
    var rounds = 1
    while (true) {
        val t = System.nanoTime()
        for (r in 0 until rounds) run()
        if (System.nanoTime() - t >= minMs * 1_000_000 || rounds >= (1 shl 24)) return rounds
        rounds *= 2
    }
}

private fun sample(requests: Int, rounds: Int, run: () -> Unit): Double {
    val t = System.nanoTime()
    for (r in 0 until rounds) run()
    return (System.nanoTime() - t).toDouble() / (rounds.toDouble() * requests)
}

private fun median(values: DoubleArray): Double {
    values.sort()
    return values[values.size / 2]
}

fun main(args: Array<String>) {
    if (args.size != 4) {
        System.err.println("usage: BenchKt MIXFILE WARM_MS MIN_MS SAMPLES")
        exitProcess(2)
    }
    val reqMethods = ArrayList<String>()
    val reqPaths = ArrayList<String>()
    for (line in File(args[0]).readText(Charsets.UTF_8).split('\n')) {
        if (line.isEmpty()) continue
        val tab = line.indexOf('\t')
        reqMethods.add(line.substring(0, tab))
        reqPaths.add(line.substring(tab + 1))
    }
    val warmMs = args[1].toLong()
    val minMs = args[2].toLong()
    val samples = args[3].toInt()
    val m = reqMethods.toTypedArray()
    val p = reqPaths.toTypedArray()
    val n = m.size
    var sink = 0L
    val classifyPass = {
        for (i in 0 until n) {
            if (RetryPolicies.classify(m[i], p[i]).operation != null) sink++
        }
    }
    val scanPass = {
        for (i in 0 until n) {
            sink += scan(m[i], p[i])
        }
    }
    val classifyRounds = calibrate(warmMs, minMs, classifyPass)
    val scanRounds = calibrate(warmMs, minMs, scanPass)
    // Samples alternate between the two, so that both see the same machine.
    val classifySamples = DoubleArray(samples)
    val scanSamples = DoubleArray(samples)
    for (s in 0 until samples) {
        classifySamples[s] = sample(n, classifyRounds, classifyPass)
        scanSamples[s] = sample(n, scanRounds, scanPass)
    }
    val classifyNs = median(classifySamples)
    val scanNs = median(scanSamples)
    // Bytes allocated per classify call, counted after the timing over passes of the whole mix.
    val threads = ManagementFactory.getThreadMXBean() as com.sun.management.ThreadMXBean
    val threadId = Thread.currentThread().id
    val allocPasses = 20
    classifyPass()
    val allocBefore = threads.getThreadAllocatedBytes(threadId)
    for (r in 0 until allocPasses) classifyPass()
    val allocated = threads.getThreadAllocatedBytes(threadId) - allocBefore
    val allocPerCall = if (n == 0) 0.0 else allocated.toDouble() / (allocPasses.toDouble() * n)
    val index = IdentityHashMap<Operation, Int>()
    RetryPolicies.OPERATIONS.forEachIndexed { i, op -> index[op] = i }
    val ops = ArrayList<String>(n)
    val classes = StringBuilder(n)
    val scanned = ArrayList<String>(n)
    for (i in 0 until n) {
        val c = RetryPolicies.classify(m[i], p[i])
        val op = c.operation
        ops.add(if (op == null) "-1" else index.getValue(op).toString())
        classes.append(letter(c.replayClass))
        scanned.add(scan(m[i], p[i]).toString())
    }
    val out = StringBuilder()
    out.append(String.format(java.util.Locale.ROOT, "classify_ns %.2f\nscan_ns %.2f\n", classifyNs, scanNs))
    out.append(String.format(java.util.Locale.ROOT, "classify_alloc_bytes %.2f\n", allocPerCall))
    out.append("classify_ops ").append(ops.joinToString(",")).append('\n')
    out.append("classify_classes ").append(classes).append('\n')
    out.append("scan_ops ").append(scanned.joinToString(",")).append('\n')
    out.append("sink ").append(sink).append('\n')
    print(out)
}
