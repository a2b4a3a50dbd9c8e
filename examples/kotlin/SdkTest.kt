// Runs fault scenarios (conformance/faults/scenarios.json, named by RETRYGEN_EXAMPLE_SCENARIOS)
// through the generated SDK's own calls against the fault server (RETRYGEN_FAULT_URL); the
// server's arrivals are checked by `cargo xtask runtime-tests --lang kotlin`
// (xtask/src/toolchains/kotlin.rs), the calls' results here. No test library: exits non-zero on
// a mismatch.

package retrygen.example

import okhttp3.OkHttpClient
import retrygen.example.sdk.apis.DefaultApi
import retrygen.example.sdk.infrastructure.ClientException
import retrygen.example.sdk.infrastructure.ServerException
import java.io.IOException
import kotlin.system.exitProcess

/** What a scenario's call must end with: a status (an SDK call returns for 2xx) or `transport`. */
private class Case(
    val call: (DefaultApi) -> Unit,
    val status: Int?,
    val readBodyMaxBytes: Long = 0,
)

private val cases: Map<String, Case> =
    mapOf(
        "get-503-503-200" to Case({ it.getSandbox("sb-1") }, 200),
        "create-503-not-replayable" to Case({ it.createSandbox() }, 503),
        "create-reset-arrives-once" to Case({ it.createSandbox() }, null),
        "kill-reset-arrives-twice" to Case({ it.killSandbox("sb-1") }, 204),
        "snapshot-minted-key-reset" to Case({ it.snapshotSandbox("sb-1") }, 201),
        "get-body-cut-read-in-loop-retried" to Case({ it.getSandbox("sb-1") }, 200, readBodyMaxBytes = 65536),
    )

/** The status the call ended with (2xx when it returned), or null for an I/O failure. */
private fun outcome(call: () -> Unit): Int? =
    try {
        call()
        200
    } catch (e: ServerException) {
        e.statusCode
    } catch (e: ClientException) {
        e.statusCode
    } catch (e: IOException) {
        null
    }

public fun main() {
    val server = System.getenv("RETRYGEN_FAULT_URL") ?: error("RETRYGEN_FAULT_URL is not set")
    val run = System.getenv("RETRYGEN_FAULT_RUN") ?: error("RETRYGEN_FAULT_RUN is not set")
    val ids = (System.getenv("RETRYGEN_EXAMPLE_SCENARIOS") ?: "").split(',').filter { it.isNotEmpty() }
    var failed = 0
    for (id in ids) {
        val case = cases[id] ?: error("no call for scenario $id")
        // The fault server finds the scenario by these headers; below the adapter, so every
        // attempt carries them.
        val tagged =
            OkHttpClient.Builder().addNetworkInterceptor { chain ->
                chain.proceed(
                    chain
                        .request()
                        .newBuilder()
                        .header("x-fault-run", run)
                        .header("x-fault-scenario", id)
                        .build(),
                )
            }
        val api = sandboxApi("$server/v1", tagged, case.readBodyMaxBytes)
        val status = outcome { case.call(api) }
        // A call that returns is a 2xx the SDK accepted: the scenario's status, whichever 2xx.
        val agrees = if (case.status == null || case.status >= 300) status == case.status else status == 200
        println("$id: ${status ?: "transport"}${if (agrees) "" else " (want ${case.status ?: "transport"})"}")
        if (!agrees) {
            failed++
        }
    }
    if (failed > 0) {
        exitProcess(1)
    }
}
