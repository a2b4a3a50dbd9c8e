// The C# runner of the fault matrix (conformance/faults/README.md): every scenario through a new
// HttpClient with RetryHandler installed over mono's (or .NET's) HttpClientHandler, against the
// real fault server. Compiled with the module rendered from conformance/faults/spec.yaml (namespace
// Retrygen.Generated, class RetryPolicies) by `cargo xtask faults --lang csharp`.
// Run as: mono fault-runner.exe SCENARIOS.json (RETRYGEN_FAULT_* variables set by xtask); with
// RETRYGEN_FAULT_SOAK set, the argument is the soak plan (one client for every request); with
// RETRYGEN_FAULT_BENCH=N, the overhead mode.
//
// Protocols: http1 and http1-tls. mono's HttpClientHandler (SocketsHttpHandler of .NET Core 3.0's
// era) has no HTTP/2 client: it sends HTTP/1.1 whatever the request's Version says, so h2c and h2
// are not run. Over TLS the client trusts exactly the CA in RETRYGEN_FAULT_CA_FILE, never "accept
// all": mono's own X509Chain cannot decode the test CA's ECDSA key ("Cannot decode public key from
// unknown OID 1.2.840.10045.2.1"), so the chain is verified by mono's TLS library (BoringSSL), given
// the CA as a trust anchor through Mono.Security's public MonoTlsSettings.TrustAnchors, and the
// ServerCertificateCustomValidationCallback accepts a certificate only when that verification
// reported no error (dates, chain) and the verified chain ends at exactly that CA, not at a
// system root. One error is checked by hand instead: mono's BoringSSL binding matches the host
// against DNS names only (X509_VERIFY_PARAM_set1_host), so the test certificate, issued for IP
// address 127.0.0.1, is a RemoteCertificateNameMismatch there; the callback then requires the URL's
// IP address among the certificate's iPAddress subject alternative names.

namespace Retrygen.Faults
{
    using System;
    using System.Collections.Generic;
    using System.Diagnostics;
    using System.Globalization;
    using System.IO;
    using System.Net;
    using System.Net.Http;
    using System.Net.Security;
    using System.Security.Cryptography.X509Certificates;
    using System.Text;
    using System.Threading;
    using System.Threading.Tasks;
    using Mono.Security.Interface;
    using Retrygen.Generated;

    internal static class FaultRunner
    {
        public static int Main(string[] args)
        {
            if (args.Length != 1)
            {
                Console.Error.WriteLine("usage: fault-runner.exe SCENARIOS.json");
                return 2;
            }

            var file = (Dictionary<string, object>)Json.Parse(File.ReadAllText(args[0], Encoding.UTF8));
            var env = new Environment(file);
            string bench = System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_BENCH");
            if (!string.IsNullOrEmpty(bench))
            {
                Console.WriteLine(Bench.Run(env, int.Parse(bench, CultureInfo.InvariantCulture)).GetAwaiter().GetResult());
                return 0;
            }

            if (!string.IsNullOrEmpty(System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_SOAK")))
            {
                SoakAsync(env, file).GetAwaiter().GetResult();
                return 0;
            }

            foreach (object scenario in (List<object>)file["scenarios"])
            {
                Console.WriteLine(ScenarioAsync(env, (Dictionary<string, object>)scenario).GetAwaiter().GetResult());
                Console.Out.Flush();
            }

            return 0;
        }

        private static async Task<string> ScenarioAsync(Environment env, Dictionary<string, object> scenario)
        {
            string id = (string)scenario["id"];
            string kind = Get<string>(scenario, "target") ?? "server";
            string baseUrl = env.Target(kind == "other_origin" ? "server" : kind) + env.BasePath;
            string url = (kind == "other_origin" ? env.Target("other_origin") + env.BasePath : baseUrl) + (string)scenario["path"];
            object timeout = Get<object>(scenario, "attempt_timeout_ms");
            bool mintKeys = Get<object>(scenario, "mint_keys") as bool? ?? true;
            object readBody = Get<object>(scenario, "read_body_max_bytes");
            RetryPolicy policy = PolicyOf(Get<Dictionary<string, object>>(scenario, "policy"));
            using (var client = new Recording(env, baseUrl, timeout == null ? (double?)null : Convert.ToDouble(timeout, CultureInfo.InvariantCulture), mintKeys, Get<string>(scenario, "attempt_header"), readBody == null ? 0 : Convert.ToInt64(readBody, CultureInfo.InvariantCulture), policy))
            {
                if (Get<object>(scenario, "warm") as bool? == true)
                {
                    bool close = Get<object>(scenario, "warm_close") as bool? == true;
                    await client.WarmUpAsync(baseUrl + "/health", close, id).ConfigureAwait(false);
                    object pause = Get<object>(scenario, "warm_pause_ms");
                    if (pause != null)
                    {
                        await Task.Delay(TimeSpan.FromMilliseconds(Convert.ToDouble(pause, CultureInfo.InvariantCulture))).ConfigureAwait(false);
                    }
                }

                return await client.SendAsync(scenario, url).ConfigureAwait(false);
            }
        }

        /// <summary>A scenario's <c>policy</c> (contract v3): the module's default policy with those keys replaced; <c>null</c> for none.</summary>
        private static RetryPolicy PolicyOf(Dictionary<string, object> keys)
        {
            if (keys == null)
            {
                return null;
            }

            IdempotencyKeyFormat format = IdempotencyKeyFormat.Uuid;
            foreach (KeyValuePair<string, object> key in keys)
            {
                if (key.Key != "idempotency_key_format")
                {
                    throw new InvalidOperationException("the runner cannot set policy key " + key.Key);
                }

                format = WireNames.ParseIdempotencyKeyFormat((string)key.Value);
            }

            return new RetryPolicy(idempotencyKeyFormat: format);
        }

        /// <summary>The soak (conformance/faults/README.md): one client for every request of the plan.</summary>
        private static async Task SoakAsync(Environment env, Dictionary<string, object> plan)
        {
            string baseUrl = env.Target("server") + env.BasePath;
            double timeout = Convert.ToDouble(plan["attempt_timeout_ms"], CultureInfo.InvariantCulture);
            using (var client = new Recording(env, baseUrl, timeout, true, null, 0))
            {
                await client.WarmUpAsync(baseUrl + "/health", false, "soak-warmup").ConfigureAwait(false);
                Console.WriteLine("{\"soak_start\": " + Resources() + "}");
                foreach (object request in (List<object>)plan["requests"])
                {
                    var r = (Dictionary<string, object>)request;
                    Console.WriteLine(await client.SendAsync(r, baseUrl + (string)r["path"]).ConfigureAwait(false));
                    Console.Out.Flush();
                }

                // A full collection first, so that memory counts what is kept, not what is garbage.
                GC.Collect();
                GC.WaitForPendingFinalizers();
                GC.Collect();
                Console.WriteLine("{\"soak_end\": " + Resources() + "}");
                Console.Out.Flush();
            }
        }

        /// <summary>Open descriptors (/proc/self/fd) and resident memory (VmRSS of /proc/self/status).</summary>
        private static string Resources()
        {
            long rss = 0;
            foreach (string line in File.ReadAllLines("/proc/self/status"))
            {
                if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
                {
                    rss = long.Parse(line.Substring(6).Trim().Split(' ')[0], CultureInfo.InvariantCulture);
                }
            }

            var item = new Json.Writer();
            item.Field("fds", (long)Directory.GetFileSystemEntries("/proc/self/fd").Length);
            item.Field("rss_kb", rss);
            return item.ToString();
        }

        private static string EventsJson(List<RetryEvent> events)
        {
            var list = new StringBuilder("[");
            foreach (RetryEvent e in events)
            {
                var item = new Json.Writer();
                item.Field("attempt", e.Attempt);
                item.Field("reason", e.Reason.ToWireName());
                item.Field("delay_ms", e.DelayMs);
                item.Field("method", e.Method);
                item.Field("path_template", e.PathTemplate);
                item.Field("operation_id", e.OperationId);
                item.Field("status", e.Status.HasValue ? (object)(long)e.Status.Value : null);
                item.Field("failure", e.Failure.HasValue ? e.Failure.Value.ToWireName() : null);
                item.Field("attempt_duration_ms", e.AttemptDurationMs);
                list.Append(list.Length > 1 ? "," : string.Empty).Append(item);
            }

            return list.Append(']').ToString();
        }

        private static string FinishJson(RetryFinishEvent f)
        {
            if (f == null)
            {
                return "null";
            }

            var item = new Json.Writer();
            item.Field("attempts", f.Attempts);
            item.Field("reason", f.Reason);
            item.Field("outcome", f.Outcome);
            item.Field("status", f.Status.HasValue ? (object)(long)f.Status.Value : null);
            item.Field("timed_out", f.TimedOut);
            item.Field("redirects", f.Redirects);
            item.Field("total_delay_ms", f.TotalDelayMs);
            item.Field("method", f.Method);
            item.Field("path_template", f.PathTemplate);
            item.Field("operation_id", f.OperationId);
            item.Field("server_delay_ms", f.ServerDelayMs.HasValue ? (object)f.ServerDelayMs.Value : null);
            return item.ToString();
        }

        private static T Get<T>(Dictionary<string, object> map, string key)
            where T : class
        {
            object value;
            return map.TryGetValue(key, out value) ? value as T : null;
        }

        /// <summary>The RETRYGEN_FAULT_* variables.</summary>
        internal sealed class Environment
        {
            private readonly Dictionary<string, string> targets = new Dictionary<string, string>();

            internal Environment(Dictionary<string, object> file)
            {
                Url = Variable("RETRYGEN_FAULT_URL");
                Run = Variable("RETRYGEN_FAULT_RUN");
                Protocol = System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_PROTOCOL") ?? "http1";
                if (Protocol != "http1" && Protocol != "http1-tls")
                {
                    throw new InvalidOperationException("protocol " + Protocol + ": mono's HttpClient speaks HTTP/1.1 only (http1, http1-tls)");
                }

                object basePath;
                BasePath = System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_BASE_PATH")
                    ?? (file.TryGetValue("base_path", out basePath) ? (string)basePath : "/v1");
                targets["server"] = Url;
                targets["closed_port"] = Variable("RETRYGEN_FAULT_CLOSED_URL");
                targets["unresolvable"] = Variable("RETRYGEN_FAULT_UNRESOLVABLE_URL");
                targets["other_origin"] = System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_OTHER_ORIGIN_URL");
                targets["untrusted_tls"] = System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_UNTRUSTED_URL");
                targets["tls_mismatch"] = System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_TLS_MISMATCH_URL");
                string caFile = System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_CA_FILE");
                if (Protocol == "http1-tls")
                {
                    if (string.IsNullOrEmpty(caFile))
                    {
                        throw new InvalidOperationException("RETRYGEN_FAULT_CA_FILE is not set: over TLS the runner trusts that CA only");
                    }

                    Authority = new X509Certificate2(caFile);

                    // Added to the verifying store of every TLS connection this process makes (the system roots
                    // stay in it: the callback below refuses a chain that ends at one of them).
                    MonoTlsSettings.DefaultSettings.TrustAnchors = new X509CertificateCollection { Authority };
                }
            }

            internal string Url { get; }

            internal string Run { get; }

            internal string Protocol { get; }

            internal string BasePath { get; }

            /// <summary>Gets the test CA over TLS, the one certificate the client trusts; <c>null</c> over plain TCP.</summary>
            internal X509Certificate2 Authority { get; }

            internal string Target(string name)
            {
                string url;
                if (!targets.TryGetValue(name, out url))
                {
                    throw new InvalidDataException("unknown target " + name);
                }

                if (string.IsNullOrEmpty(url))
                {
                    throw new InvalidOperationException("target " + name + ": its variable is not set");
                }

                return url;
            }

            internal HttpRequestMessage Request(HttpMethod method, string url, string scenario)
            {
                var request = new HttpRequestMessage(method, new Uri(url));
                request.Headers.TryAddWithoutValidation("x-fault-run", Run);
                request.Headers.TryAddWithoutValidation("x-fault-scenario", scenario);
                return request;
            }

            /// <summary>The client's own handler: HttpClientHandler, trusting exactly the test CA over TLS.</summary>
            internal HttpClientHandler Handler()
            {
                var handler = new HttpClientHandler();
                if (Authority != null)
                {
                    X509Certificate2 authority = Authority;
                    handler.ServerCertificateCustomValidationCallback = (request, certificate, chain, errors) => TrustedBy(authority, request, certificate, chain, errors);
                }

                return handler;
            }

            /// <summary>
            /// Whether the server's certificate is trusted by <paramref name="authority"/> alone: the TLS library verified
            /// it with no error (chain, dates; a name mismatch only where the URL's host is an IP address the certificate
            /// names), and the chain it verified ends at exactly that certificate.
            /// </summary>
            private static bool TrustedBy(X509Certificate2 authority, HttpRequestMessage request, X509Certificate2 certificate, X509Chain chain, SslPolicyErrors errors)
            {
                if (errors == SslPolicyErrors.RemoteCertificateNameMismatch && request != null && request.RequestUri != null
                    && NamesAddress(certificate, request.RequestUri.Host))
                {
                    errors = SslPolicyErrors.None;
                }

                if (errors != SslPolicyErrors.None || chain == null || chain.ChainElements.Count == 0)
                {
                    return false;
                }

                byte[] root = chain.ChainElements[chain.ChainElements.Count - 1].Certificate.RawData;
                byte[] expected = authority.RawData;
                if (root.Length != expected.Length)
                {
                    return false;
                }

                for (int i = 0; i < root.Length; i++)
                {
                    if (root[i] != expected[i])
                    {
                        return false;
                    }
                }

                return true;
            }

            /// <summary>Whether <paramref name="host"/> is an IP address among the certificate's iPAddress alternative names.</summary>
            private static bool NamesAddress(X509Certificate2 certificate, string host)
            {
                IPAddress address;
                if (certificate == null || !IPAddress.TryParse(host.Trim('[', ']'), out address))
                {
                    return false;
                }

                byte[] wanted = address.GetAddressBytes();
                foreach (X509Extension extension in certificate.Extensions)
                {
                    if (extension.Oid == null || extension.Oid.Value != "2.5.29.17")
                    {
                        continue;
                    }

                    // GeneralNames ::= SEQUENCE OF GeneralName; iPAddress is [7] IMPLICIT OCTET STRING (tag 0x87).
                    byte[] der = extension.RawData;
                    int at = 0;
                    if (der.Length < 2 || der[at++] != 0x30)
                    {
                        return false;
                    }

                    int end = ReadLength(der, ref at);
                    end = end < 0 ? -1 : Math.Min(der.Length, at + end);
                    while (end > 0 && at < end)
                    {
                        byte tag = der[at++];
                        int length = ReadLength(der, ref at);
                        if (length < 0 || at + length > end)
                        {
                            return false;
                        }

                        if (tag == 0x87 && length == wanted.Length)
                        {
                            bool same = true;
                            for (int i = 0; i < length; i++)
                            {
                                same &= der[at + i] == wanted[i];
                            }

                            if (same)
                            {
                                return true;
                            }
                        }

                        at += length;
                    }
                }

                return false;
            }

            /// <summary>A DER length (short or long form, up to four bytes) at <paramref name="at"/>; -1 when malformed.</summary>
            private static int ReadLength(byte[] der, ref int at)
            {
                if (at >= der.Length)
                {
                    return -1;
                }

                int first = der[at++];
                if (first < 0x80)
                {
                    return first;
                }

                int count = first & 0x7F;
                if (count == 0 || count > 4 || at + count > der.Length)
                {
                    return -1;
                }

                int length = 0;
                for (int i = 0; i < count; i++)
                {
                    length = (length << 8) | der[at++];
                }

                return length < 0 ? -1 : length;
            }

            private static string Variable(string name)
            {
                string value = System.Environment.GetEnvironmentVariable(name);
                if (string.IsNullOrEmpty(value))
                {
                    throw new InvalidOperationException(name + " is not set (run through `cargo xtask faults`)");
                }

                return value;
            }
        }

        /// <summary>An HttpClient with RetryHandler over the environment's handler, recording the events of the request in flight.</summary>
        private sealed class Recording : IDisposable
        {
            private readonly Environment env;
            private readonly HttpClient client;
            private readonly List<RetryEvent> events = new List<RetryEvent>();
            private readonly List<RetryFinishEvent> finishes = new List<RetryFinishEvent>();

            internal Recording(Environment env, string baseUrl, double? attemptTimeoutMs, bool mintKeys, string attemptHeader, long readBodyMaxBytes, RetryPolicy policy = null)
            {
                this.env = env;
                var options = new RetryHandlerOptions
                {
                    Policy = policy,
                    BaseAddress = new Uri(baseUrl),
                    OnRetry = e => events.Add(e),
                    OnFinish = f => finishes.Add(f),
                    MintIdempotencyKeys = mintKeys,
                    AttemptHeader = attemptHeader,
                    ReadBodyMaxBytes = readBodyMaxBytes,
                };
                if (attemptTimeoutMs.HasValue)
                {
                    options.AttemptTimeout = TimeSpan.FromMilliseconds(attemptTimeoutMs.Value);
                }

                client = new HttpClient(new RetryHandler(RetryPolicies.Tables, options, env.Handler()));
            }

            public void Dispose()
            {
                client.Dispose();
            }

            internal async Task WarmUpAsync(string url, bool close, string id)
            {
                using (HttpRequestMessage warmUp = env.Request(HttpMethod.Get, url, id))
                {
                    warmUp.Headers.TryAddWithoutValidation("x-fault-warmup", close ? "close" : "1");
                    using (HttpResponseMessage warm = await client.SendAsync(warmUp, HttpCompletionOption.ResponseHeadersRead).ConfigureAwait(false))
                    {
                        await warm.Content.ReadAsStringAsync().ConfigureAwait(false);
                    }
                }
            }

            /// <summary>Sends one request of a scenario or of the soak plan and gives its line.</summary>
            internal async Task<string> SendAsync(Dictionary<string, object> scenario, string url)
            {
                events.Clear();
                finishes.Clear();
                string id = (string)scenario["id"];
                HttpRequestMessage request = env.Request(new HttpMethod((string)scenario["method"]), url, id);
                var headers = Get<Dictionary<string, object>>(scenario, "headers");
                if (headers != null)
                {
                    foreach (KeyValuePair<string, object> header in headers)
                    {
                        request.Headers.TryAddWithoutValidation(header.Key, (string)header.Value);
                    }
                }

                var body = Get<Dictionary<string, object>>(scenario, "body");
                if (body != null)
                {
                    byte[] bytes = Encoding.UTF8.GetBytes((string)body["text"]);
                    request.Content = (string)body["kind"] == "stream" ? (HttpContent)new StreamContent(new OneShotStream(bytes)) : new ByteArrayContent(bytes);
                }

                // P1: the request's own overrides, in the request's options.
                var overrides = Get<Dictionary<string, object>>(scenario, "overrides");
                if (overrides != null)
                {
                    var set = new RetryOverrides();
                    object value;
                    if (overrides.TryGetValue("max_retries", out value))
                    {
                        set.MaxRetries = Convert.ToInt32(value, CultureInfo.InvariantCulture);
                    }

                    if (overrides.TryGetValue("attempt_timeout_ms", out value))
                    {
                        set.AttemptTimeout = value == null ? Timeout.InfiniteTimeSpan : TimeSpan.FromMilliseconds(Convert.ToDouble(value, CultureInfo.InvariantCulture));
                    }

                    if (overrides.TryGetValue("read_body_max_bytes", out value))
                    {
                        set.ReadBodyMaxBytes = Convert.ToInt64(value, CultureInfo.InvariantCulture);
                    }

                    request.SetRetryOverrides(set);
                }

                object abortAfter = Get<object>(scenario, "abort_after_ms");
                var abort = abortAfter == null ? new CancellationTokenSource() : new CancellationTokenSource(TimeSpan.FromMilliseconds(Convert.ToDouble(abortAfter, CultureInfo.InvariantCulture)));
                Stopwatch clock = Stopwatch.StartNew();
                HttpResponseMessage response = null;
                Exception error = null;
                string text = null;
                bool bodyError = false;
                try
                {
                    response = await client.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, abort.Token).ConfigureAwait(false);
                }
                catch (Exception e)
                {
                    error = e;
                }

                RetryFinishEvent fromResult = response != null || error == null ? null : error.GetRetryFinish();
                object closeAfter = Get<object>(scenario, "close_after_events");
                if (response != null)
                {
                    try
                    {
                        text = closeAfter == null
                            ? await response.Content.ReadAsStringAsync().ConfigureAwait(false)
                            : await ReadEventsAsync(response.Content, Convert.ToInt32(closeAfter, CultureInfo.InvariantCulture)).ConfigureAwait(false);
                    }
                    catch (Exception)
                    {
                        bodyError = true;
                    }

                    // With close_after_events this is the caller closing the body while reading it (contract X4).
                    response.Dispose();

                    // P5: the finish read back from the response, once its stream ended (contract X4).
                    fromResult = response.GetRetryFinish();
                }

                long elapsed = clock.ElapsedMilliseconds;
                abort.Dispose();

                // The call failed exactly when the last finish event says its last attempt did not end with a status.
                RetryFinishEvent finish = finishes.Count == 0 ? null : finishes[finishes.Count - 1];
                bool finishFailed = finish != null && finish.Outcome != "status";
                string failure = (error != null) != finishFailed || finish == null ? "mismatch" : (error != null ? finish.Outcome : null);
                long reported = 0;
                foreach (RetryFinishEvent f in finishes)
                {
                    reported += f.Attempts + f.Redirects;
                }

                var line = new Json.Writer();
                line.Field("id", id);
                line.Field("status", response == null ? null : (object)(long)(int)response.StatusCode);
                line.Field("error", failure);
                line.Field("body", text);
                line.Field("body_error", bodyError);
                line.Raw("events", EventsJson(events));
                line.Raw("finish", FinishJson(finish));
                line.Raw("finish_from_result", FinishJson(fromResult));
                line.Field("finishes", (long)finishes.Count);
                line.Field("reported_arrivals", reported);
                line.Field("error_type", error == null ? null : error.GetType().Name);
                line.Field("elapsed_ms", elapsed);
                return line.ToString();
            }
        }

        /// <summary>
        /// Reads a body until the text read holds <paramref name="events"/> complete events (that many <c>\n\n</c>, the
        /// blank line that ends an event), and returns exactly the text read; the caller then closes the body.
        /// </summary>
        private static async Task<string> ReadEventsAsync(HttpContent content, int events)
        {
            Stream body = await content.ReadAsStreamAsync().ConfigureAwait(false);
            var read = new MemoryStream();
            var buffer = new byte[4096];
            while (BlankLines(read) < events)
            {
                int n = await body.ReadAsync(buffer, 0, buffer.Length).ConfigureAwait(false);
                if (n <= 0)
                {
                    break;
                }

                read.Write(buffer, 0, n);
            }

            return Encoding.UTF8.GetString(read.ToArray());
        }

        /// <summary>How many times <c>\n\n</c> occurs in the bytes (without overlap); a blank line may straddle two reads.</summary>
        private static int BlankLines(MemoryStream read)
        {
            byte[] bytes = read.GetBuffer();
            int count = 0;
            for (long i = 0; i + 1 < read.Length; i++)
            {
                if (bytes[i] == (byte)'\n' && bytes[i + 1] == (byte)'\n')
                {
                    count++;
                    i++;
                }
            }

            return count;
        }

        /// <summary>A body the client can send only once: not seekable, no length.</summary>
        private sealed class OneShotStream : Stream
        {
            private readonly byte[] bytes;
            private int position;

            internal OneShotStream(byte[] bytes)
            {
                this.bytes = bytes;
            }

            public override bool CanRead => true;

            public override bool CanSeek => false;

            public override bool CanWrite => false;

            public override long Length => throw new NotSupportedException();

            public override long Position
            {
                get { throw new NotSupportedException(); }
                set { throw new NotSupportedException(); }
            }

            public override int Read(byte[] buffer, int offset, int count)
            {
                int n = Math.Min(count, bytes.Length - position);
                Array.Copy(bytes, position, buffer, offset, n);
                position += n;
                return n;
            }

            public override void Flush()
            {
            }

            public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

            public override void SetLength(long value) => throw new NotSupportedException();

            public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
        }
    }

    /// <summary>The overhead mode (RETRYGEN_FAULT_BENCH=N): bare HttpClient against HttpClient with RetryHandler.</summary>
    internal static class Bench
    {
        private const int WarmUp = 200;

        internal static async Task<string> Run(FaultRunner.Environment env, int rounds)
        {
            string url = env.Url + env.BasePath + "/health";
            using (var bare = new HttpClient(env.Handler()))
            using (var adapted = new HttpClient(new RetryHandler(RetryPolicies.Tables, env.Handler())))
            {
                for (int i = 0; i < WarmUp; i++)
                {
                    await Once(bare, env, url).ConfigureAwait(false);
                    await Once(adapted, env, url).ConfigureAwait(false);
                }

                var bareTimes = new List<double>(rounds);
                var adaptedTimes = new List<double>(rounds);
                for (int i = 0; i < rounds; i++)
                {
                    bool bareFirst = i % 2 == 0;
                    (bareFirst ? bareTimes : adaptedTimes).Add(await Once(bareFirst ? bare : adapted, env, url).ConfigureAwait(false));
                    (bareFirst ? adaptedTimes : bareTimes).Add(await Once(bareFirst ? adapted : bare, env, url).ConfigureAwait(false));
                }

                double bareUs = Median(bareTimes);
                double adaptedUs = Median(adaptedTimes);
                var result = new Json.Writer();
                result.Field("requests", (long)rounds);
                result.Field("bare_us", Math.Round(bareUs, 1));
                result.Field("adapter_us", Math.Round(adaptedUs, 1));
                result.Field("overhead_us", Math.Round(adaptedUs - bareUs, 1));
                result.Field("overhead_pct", Math.Round((adaptedUs - bareUs) / bareUs * 100, 1));
                result.Field("allocated_bytes_per_request", AdapterAllocation(rounds));
                result.Field("allocation_counter", "GC.GetAllocatedBytesForCurrentThread around RetryHandler over an inner handler that answers at once (HttpClient's continuations hop threads); the empty body a bodiless request gets over SocketsHttpHandler is not counted");
                return "{\"bench\": " + result + "}";
            }
        }

        private static async Task<double> Once(HttpClient client, FaultRunner.Environment env, string url)
        {
            long start = Stopwatch.GetTimestamp();
            using (HttpRequestMessage request = env.Request(HttpMethod.Get, url, "bench"))
            {
                request.Headers.TryAddWithoutValidation("x-fault-warmup", "1");
                using (HttpResponseMessage response = await client.SendAsync(request).ConfigureAwait(false))
                {
                    await response.Content.ReadAsStringAsync().ConfigureAwait(false);
                }
            }

            return (Stopwatch.GetTimestamp() - start) * 1e6 / Stopwatch.Frequency;
        }

        /// <summary>
        /// The adapter's own allocation per request: the same request sent through an invoker over a handler that
        /// answers at once, with and without RetryHandler, on this thread only (every await completes synchronously).
        /// </summary>
        private static long AdapterAllocation(int rounds)
        {
            var answer = new Answer();
            var bare = new HttpMessageInvoker(answer, false);
            var adapted = new HttpMessageInvoker(new RetryHandler(RetryPolicies.Tables, answer), false);
            var uri = new Uri("http://127.0.0.1/v1/health");
            long bareBytes = 0;
            long adaptedBytes = 0;
            for (int round = 0; round < 2; round++)
            {
                bareBytes = adaptedBytes = 0;
                for (int i = 0; i < rounds; i++)
                {
                    long before = GC.GetAllocatedBytesForCurrentThread();
                    bare.SendAsync(new HttpRequestMessage(HttpMethod.Get, uri), CancellationToken.None).GetAwaiter().GetResult();
                    long middle = GC.GetAllocatedBytesForCurrentThread();
                    adapted.SendAsync(new HttpRequestMessage(HttpMethod.Get, uri), CancellationToken.None).GetAwaiter().GetResult();
                    long after = GC.GetAllocatedBytesForCurrentThread();
                    bareBytes += middle - before;
                    adaptedBytes += after - middle;
                }
            }

            return (adaptedBytes - bareBytes) / Math.Max(1, rounds);
        }

        private static double Median(List<double> values)
        {
            values.Sort();
            int n = values.Count;
            return n == 0 ? 0 : (n % 2 == 1 ? values[n / 2] : (values[(n / 2) - 1] + values[n / 2]) / 2);
        }

        /// <summary>Answers 200 at once, with a shared response: the allocation measured is the adapter's.</summary>
        private sealed class Answer : HttpMessageHandler
        {
            private readonly Task<HttpResponseMessage> ok = Task.FromResult(new HttpResponseMessage(System.Net.HttpStatusCode.OK));

            protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
            {
                return ok;
            }
        }
    }

    /// <summary>Just enough JSON for the scenario file and the result lines.</summary>
    internal static class Json
    {
        internal static object Parse(string text)
        {
            int at = 0;
            object value = ReadValue(text, ref at);
            SkipSpace(text, ref at);
            if (at != text.Length)
            {
                throw new InvalidDataException("JSON: trailing text at " + at);
            }

            return value;
        }

        private static object ReadValue(string text, ref int at)
        {
            SkipSpace(text, ref at);
            if (at >= text.Length)
            {
                throw new InvalidDataException("JSON: unexpected end");
            }

            char c = text[at];
            if (c == '{')
            {
                var map = new Dictionary<string, object>();
                at++;
                SkipSpace(text, ref at);
                if (text[at] == '}')
                {
                    at++;
                    return map;
                }

                while (true)
                {
                    SkipSpace(text, ref at);
                    string key = ReadString(text, ref at);
                    SkipSpace(text, ref at);
                    Expect(text, ref at, ':');
                    map[key] = ReadValue(text, ref at);
                    SkipSpace(text, ref at);
                    if (text[at] == ',')
                    {
                        at++;
                        continue;
                    }

                    Expect(text, ref at, '}');
                    return map;
                }
            }

            if (c == '[')
            {
                var list = new List<object>();
                at++;
                SkipSpace(text, ref at);
                if (text[at] == ']')
                {
                    at++;
                    return list;
                }

                while (true)
                {
                    list.Add(ReadValue(text, ref at));
                    SkipSpace(text, ref at);
                    if (text[at] == ',')
                    {
                        at++;
                        continue;
                    }

                    Expect(text, ref at, ']');
                    return list;
                }
            }

            if (c == '"')
            {
                return ReadString(text, ref at);
            }

            foreach (KeyValuePair<string, object> word in new[] { new KeyValuePair<string, object>("true", true), new KeyValuePair<string, object>("false", false), new KeyValuePair<string, object>("null", null) })
            {
                if (string.CompareOrdinal(text, at, word.Key, 0, word.Key.Length) == 0)
                {
                    at += word.Key.Length;
                    return word.Value;
                }
            }

            int start = at;
            while (at < text.Length && "+-0123456789.eE".IndexOf(text[at]) >= 0)
            {
                at++;
            }

            string number = text.Substring(start, at - start);
            long integer;
            if (long.TryParse(number, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out integer))
            {
                return integer;
            }

            return double.Parse(number, NumberStyles.Float, CultureInfo.InvariantCulture);
        }

        private static string ReadString(string text, ref int at)
        {
            Expect(text, ref at, '"');
            var s = new StringBuilder();
            while (text[at] != '"')
            {
                char c = text[at++];
                if (c != '\\')
                {
                    s.Append(c);
                    continue;
                }

                char e = text[at++];
                switch (e)
                {
                    case 'n': s.Append('\n'); break;
                    case 't': s.Append('\t'); break;
                    case 'r': s.Append('\r'); break;
                    case 'b': s.Append('\b'); break;
                    case 'f': s.Append('\f'); break;
                    case 'u':
                        s.Append((char)int.Parse(text.Substring(at, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture));
                        at += 4;
                        break;
                    default: s.Append(e); break;
                }
            }

            at++;
            return s.ToString();
        }

        private static void SkipSpace(string text, ref int at)
        {
            while (at < text.Length && char.IsWhiteSpace(text[at]))
            {
                at++;
            }
        }

        private static void Expect(string text, ref int at, char c)
        {
            if (at >= text.Length || text[at] != c)
            {
                throw new InvalidDataException("JSON: expected '" + c + "' at " + at);
            }

            at++;
        }

        /// <summary>One JSON object, field by field.</summary>
        internal sealed class Writer
        {
            private readonly StringBuilder text = new StringBuilder("{");

            internal void Field(string name, object value)
            {
                Raw(name, Value(value));
            }

            internal void Raw(string name, string json)
            {
                text.Append(text.Length > 1 ? ", " : string.Empty).Append(Quote(name)).Append(": ").Append(json);
            }

            public override string ToString()
            {
                return text.ToString() + "}";
            }

            private static string Value(object value)
            {
                if (value == null)
                {
                    return "null";
                }

                if (value is bool)
                {
                    return (bool)value ? "true" : "false";
                }

                if (value is long)
                {
                    return ((long)value).ToString(CultureInfo.InvariantCulture);
                }

                if (value is double)
                {
                    return ((double)value).ToString("R", CultureInfo.InvariantCulture);
                }

                return Quote((string)value);
            }

            private static string Quote(string s)
            {
                var q = new StringBuilder("\"");
                foreach (char c in s)
                {
                    switch (c)
                    {
                        case '"': q.Append("\\\""); break;
                        case '\\': q.Append("\\\\"); break;
                        case '\n': q.Append("\\n"); break;
                        case '\r': q.Append("\\r"); break;
                        case '\t': q.Append("\\t"); break;
                        default:
                            if (c < ' ')
                            {
                                q.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                            }
                            else
                            {
                                q.Append(c);
                            }

                            break;
                    }
                }

                return q.Append('"').ToString();
            }
        }
    }
}
