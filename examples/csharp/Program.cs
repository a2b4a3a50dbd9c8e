// Runs a few fault-matrix scenarios through SandboxClient's own calls, with RetryHandler installed
// in the HttpClient the SDK is given (three lines, in NewSdk), against the real fault server.
// Built and run by `cargo xtask runtime-tests --lang csharp`, which starts the server, passes
// RETRYGEN_FAULT_URL and RETRYGEN_FAULT_RUN, and checks each printed line against the server's
// arrivals and the scenario's expectations. Prints one JSON line per scenario.

namespace Sandbox.Example
{
    using System;
    using System.Net.Http;
    using System.Threading.Tasks;
    using Retrygen.Generated;
    using Sandbox.Sdk;

    internal static class Program
    {
        public static int Main(string[] args)
        {
            string url = Environment.GetEnvironmentVariable("RETRYGEN_FAULT_URL");
            string run = Environment.GetEnvironmentVariable("RETRYGEN_FAULT_RUN");
            if (string.IsNullOrEmpty(url) || string.IsNullOrEmpty(run))
            {
                Console.Error.WriteLine("RETRYGEN_FAULT_URL and RETRYGEN_FAULT_RUN must be set");
                return 2;
            }

            foreach (string id in args)
            {
                Console.WriteLine(RunAsync(url, run, id).GetAwaiter().GetResult());
            }

            return 0;
        }

        /// <summary>The SDK with the adapter installed, as its README says (a new one per scenario: a fresh budget).</summary>
        private static SandboxClient NewSdk(string url, string run, string id)
        {
            var baseAddress = new Uri(url + "/v1/");
            var retry = new RetryHandler(RetryPolicies.Tables, new RetryHandlerOptions { BaseAddress = baseAddress, ReadBodyMaxBytes = 65536 }, new HttpClientHandler());
            var http = new HttpClient(retry) { BaseAddress = baseAddress };

            // The fault server's routing headers, not part of the installation.
            http.DefaultRequestHeaders.TryAddWithoutValidation("x-fault-run", run);
            http.DefaultRequestHeaders.TryAddWithoutValidation("x-fault-scenario", id);
            return new SandboxClient(http);
        }

        private static async Task<string> RunAsync(string url, string run, string id)
        {
            SandboxClient sdk = NewSdk(url, run, id);
            string body = null;
            int? status = null;
            bool success = false;
            string error = null;
            RetryFinishEvent finish = null;
            try
            {
                switch (id)
                {
                    case "get-503-503-200":
                    case "get-reset-exhausted":
                    case "get-body-cut-read-in-loop-retried":
                        body = await sdk.GetSandboxAsync("sb-1").ConfigureAwait(false);
                        break;
                    case "get-override-max-retries-0-once":
                        body = await sdk.GetSandboxAsync("sb-1", r => r.SetRetryOverrides(new RetryOverrides { MaxRetries = 0 })).ConfigureAwait(false);
                        break;
                    case "create-503-not-replayable":
                    case "create-reset-arrives-once":
                        body = await sdk.CreateSandboxAsync("base").ConfigureAwait(false);
                        break;
                    case "snapshot-minted-key-reset":
                        body = await sdk.SnapshotSandboxAsync("sb-1", "s1").ConfigureAwait(false);
                        break;
                    default:
                        throw new ArgumentException("no SDK call for scenario " + id);
                }

                success = true;
            }
            catch (SandboxApiException e)
            {
                status = e.Status;
                finish = e.Response.GetRetryFinish();
            }
            catch (HttpRequestException e)
            {
                error = "transport";
                finish = e.GetRetryFinish();
            }

            return "{\"id\": \"" + id + "\", \"success\": " + (success ? "true" : "false") + ", \"status\": " + (status.HasValue ? status.Value.ToString() : "null")
                + ", \"error\": " + (error == null ? "null" : "\"" + error + "\"")
                + ", \"body\": " + (body == null ? "null" : "\"" + body.Replace("\\", "\\\\").Replace("\"", "\\\"") + "\"")
                + ", \"attempts\": " + (finish == null ? "null" : finish.Attempts.ToString()) + "}";
        }
    }
}
