// The C# runner of the fault matrix (conformance/faults/README.md): every scenario through a new
// HttpClient with RetryHandler installed over mono's (or .NET's) HttpClientHandler, against the
// real fault server. Compiled with the module rendered from conformance/faults/spec.yaml (namespace
// Retrygen.Generated, class RetryPolicies) by `cargo xtask faults --lang csharp`.
// Run as: mono fault-runner.exe SCENARIOS.json (RETRYGEN_FAULT_* variables set by xtask).

namespace Retrygen.Faults
{
    using System;
    using System.Collections.Generic;
    using System.Diagnostics;
    using System.Globalization;
    using System.IO;
    using System.Net.Http;
    using System.Text;
    using System.Threading;
    using System.Threading.Tasks;
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

            foreach (object scenario in (List<object>)file["scenarios"])
            {
                Console.WriteLine(RunAsync(env, (Dictionary<string, object>)scenario).GetAwaiter().GetResult());
                Console.Out.Flush();
            }

            return 0;
        }

        private static async Task<string> RunAsync(Environment env, Dictionary<string, object> scenario)
        {
            string id = (string)scenario["id"];
            string baseUrl = env.Target(Get<string>(scenario, "target") ?? "server") + env.BasePath;
            var events = new List<RetryEvent>();
            RetryFinishEvent finish = null;
            var options = new RetryHandlerOptions
            {
                BaseAddress = new Uri(baseUrl),
                OnRetry = e => events.Add(e),
                OnFinish = f => finish = f,
                MintIdempotencyKeys = Get<object>(scenario, "mint_keys") as bool? ?? true,
            };
            object timeout = Get<object>(scenario, "attempt_timeout_ms");
            if (timeout != null)
            {
                options.AttemptTimeout = TimeSpan.FromMilliseconds(Convert.ToDouble(timeout, CultureInfo.InvariantCulture));
            }

            var line = new Json.Writer();
            line.Field("id", id);
            using (var client = new HttpClient(new RetryHandler(RetryPolicies.Tables, options, new HttpClientHandler())))
            {
                if (Get<object>(scenario, "warm") as bool? == true)
                {
                    using (HttpRequestMessage warmUp = env.Request(HttpMethod.Get, baseUrl + "/health", id))
                    {
                        warmUp.Headers.TryAddWithoutValidation("x-fault-warmup", "1");
                        using (HttpResponseMessage warm = await client.SendAsync(warmUp, HttpCompletionOption.ResponseHeadersRead).ConfigureAwait(false))
                        {
                            await warm.Content.ReadAsStringAsync().ConfigureAwait(false);
                        }
                    }

                    events.Clear();
                    finish = null;
                }

                HttpRequestMessage request = env.Request(new HttpMethod((string)scenario["method"]), baseUrl + (string)scenario["path"], id);
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

                if (response != null)
                {
                    try
                    {
                        text = await response.Content.ReadAsStringAsync().ConfigureAwait(false);
                    }
                    catch (Exception)
                    {
                        bodyError = true;
                    }

                    response.Dispose();
                }

                long elapsed = clock.ElapsedMilliseconds;
                abort.Dispose();

                // The call failed exactly when the finish event says the last attempt did not end with a status.
                bool finishFailed = finish != null && finish.Outcome != "status";
                string failure = (error != null) != finishFailed ? "mismatch" : (error != null ? finish.Outcome : null);
                line.Field("status", response == null ? null : (object)(long)(int)response.StatusCode);
                line.Field("error", failure);
                line.Field("body", text);
                line.Field("body_error", bodyError);
                line.Raw("events", EventsJson(events));
                line.Raw("finish", FinishJson(finish));
                line.Field("error_type", error == null ? null : error.GetType().Name);
                line.Field("elapsed_ms", elapsed);
            }

            return line.ToString();
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
            item.Field("method", f.Method);
            item.Field("path_template", f.PathTemplate);
            item.Field("operation_id", f.OperationId);
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
            internal Environment(Dictionary<string, object> file)
            {
                Url = Variable("RETRYGEN_FAULT_URL");
                ClosedUrl = Variable("RETRYGEN_FAULT_CLOSED_URL");
                UnresolvableUrl = Variable("RETRYGEN_FAULT_UNRESOLVABLE_URL");
                Run = Variable("RETRYGEN_FAULT_RUN");
                BasePath = System.Environment.GetEnvironmentVariable("RETRYGEN_FAULT_BASE_PATH") ?? (string)file["base_path"];
            }

            internal string Url { get; }

            internal string ClosedUrl { get; }

            internal string UnresolvableUrl { get; }

            internal string Run { get; }

            internal string BasePath { get; }

            internal string Target(string name)
            {
                switch (name)
                {
                    case "server": return Url;
                    case "closed_port": return ClosedUrl;
                    case "unresolvable": return UnresolvableUrl;
                    default: throw new InvalidDataException("unknown target " + name);
                }
            }

            internal HttpRequestMessage Request(HttpMethod method, string url, string scenario)
            {
                var request = new HttpRequestMessage(method, new Uri(url));
                request.Headers.TryAddWithoutValidation("x-fault-run", Run);
                request.Headers.TryAddWithoutValidation("x-fault-scenario", scenario);
                return request;
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
            using (var bare = new HttpClient(new HttpClientHandler()))
            using (var adapted = new HttpClient(new RetryHandler(RetryPolicies.Tables, new HttpClientHandler())))
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
