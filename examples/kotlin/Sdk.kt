// The SDK of examples/kotlin: OpenAPI Generator's Kotlin client (library jvm-okhttp4, generated
// from conformance/faults/spec.yaml into package retrygen.example.sdk at test time) with
// retrygen's OkHttp adapter installed. The generated API classes default to one global client
// (ApiClient.defaultClient): an SDK hands them its own, with the adapter, as below.

package retrygen.example

import okhttp3.OkHttpClient
import retrygen.example.sdk.apis.DefaultApi
import retrygen.generated.RetryInterceptor
import retrygen.generated.RetryPolicies

/**
 * The generated API over a client with retrygen's adapter: [baseUrl] is the API's (the
 * adapter's classifier and origin scope need it), [builder] the SDK's own client settings.
 */
public fun sandboxApi(
    baseUrl: String,
    builder: OkHttpClient.Builder = OkHttpClient.Builder(),
    readBodyMaxBytes: Long = 0,
): DefaultApi {
    // The three lines of the installation.
    val retries =
        RetryInterceptor
            .builder(
                RetryPolicies.TABLE,
                RetryPolicies.DEFAULT_POLICY,
            ).baseUrl(baseUrl)
            .readBodyMaxBytes(readBodyMaxBytes)
            .build()
    val client = retries.install(builder).build()
    return DefaultApi(baseUrl, retries.callFactory(client))
}
