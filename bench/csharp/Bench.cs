// Matching bench for the generated C# module (see bench/README.md).
// Run as: mono bench.exe MIXFILE WARM_MS MIN_MS SAMPLES
// Compiled together with the module rendered with default options (namespace Retrygen.Generated).

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Text;
using System.Text.RegularExpressions;
using Retrygen.Generated;

namespace Retrygen.Bench
{
    internal static class Bench
    {
        // The baseline: [method, anchored regex] pairs of every operation, in table order.
        private static string[] methods;
        private static Regex[] patterns;
        private static readonly char[] QueryStart = { '?', '#' };

        private static int Scan(string method, string path)
        {
            int cut = path.IndexOfAny(QueryStart);
            if (cut >= 0)
            {
                path = path.Substring(0, cut);
            }

            string basePath = RetryPolicies.BasePath;
            if (basePath.Length > 0 && path.StartsWith(basePath, StringComparison.Ordinal)
                && (path.Length == basePath.Length || path[basePath.Length] == '/'))
            {
                path = path.Substring(basePath.Length);
            }

            for (int i = 0; i < methods.Length; i++)
            {
                if (string.Equals(methods[i], method, StringComparison.Ordinal) && patterns[i].IsMatch(path))
                {
                    return i;
                }
            }

            return -1;
        }

        private static char Letter(ReplayClass c)
        {
            switch (c)
            {
                case ReplayClass.Idempotent: return 'i';
                case ReplayClass.Keyed: return 'k';
                case ReplayClass.NonReplayable: return 'n';
                case ReplayClass.NoRetry: return 'r';
                default: return '?';
            }
        }

        private static long Calibrate(long warmMs, long minMs, Action run)
        {
            var start = Stopwatch.StartNew();
            run();
            while (start.ElapsedMilliseconds < warmMs)
            {
                run();
            }

            long rounds = 1;
            while (true)
            {
                var t = Stopwatch.StartNew();
                for (long r = 0; r < rounds; r++)
                {
                    run();
                }

                if (t.ElapsedMilliseconds >= minMs || rounds >= (1 << 24))
                {
                    return rounds;
                }

                rounds *= 2;
            }
        }

        private static double Sample(int requests, long rounds, Action run)
        {
            var t = Stopwatch.StartNew();
            for (long r = 0; r < rounds; r++)
            {
                run();
            }

            double ns = t.ElapsedTicks * (1e9 / Stopwatch.Frequency);
            return ns / (rounds * (double)requests);
        }

        /// <summary>
        /// The expression SDKs write by hand today (and retrygen's v1 list carried): the template's literal text as
        /// written, syntax characters escaped, <c>[^/]+</c> per parameter, one optional trailing slash. The module's
        /// own <c>Operation.Pattern</c> is contract v2's safe-list expression, slower by design (every literal
        /// character also matches its percent-encoding), so it would flatter <c>classify</c>.
        /// </summary>
        private static Regex PlainPattern(string path)
        {
            int cut = path.IndexOfAny(new[] { '?', '#' });
            string route = cut < 0 ? path : path.Substring(0, cut);
            string rest = route.StartsWith("/", StringComparison.Ordinal) ? route.Substring(1) : route;
            if (rest.EndsWith("/", StringComparison.Ordinal))
            {
                rest = rest.Substring(0, rest.Length - 1);
            }

            var source = new StringBuilder("^");
            if (rest.Length == 0)
            {
                source.Append('/');
            }
            else
            {
                foreach (string segment in rest.Split('/'))
                {
                    source.Append('/');
                    for (int i = 0; i < segment.Length; i++)
                    {
                        char c = segment[i];
                        int close = c == '{' ? segment.IndexOf('}', i) : -1;
                        if (close > i)
                        {
                            source.Append("[^/]+");
                            i = close;
                            continue;
                        }

                        if ("\\.+*?()|[]{}^$".IndexOf(c) >= 0)
                        {
                            source.Append('\\');
                        }

                        source.Append(c);
                    }
                }

                source.Append("/?");
            }

            return new Regex(source.Append('$').ToString(), RegexOptions.CultureInvariant);
        }

        private static double Median(double[] values)
        {
            Array.Sort(values);
            return values[values.Length / 2];
        }

        public static int Main(string[] args)
        {
            if (args.Length != 4)
            {
                Console.Error.WriteLine("usage: bench.exe MIXFILE WARM_MS MIN_MS SAMPLES");
                return 2;
            }

            var ops = RetryPolicies.Operations;
            methods = new string[ops.Count];
            patterns = new Regex[ops.Count];
            for (int i = 0; i < ops.Count; i++)
            {
                methods[i] = ops[i].Method;
                patterns[i] = PlainPattern(ops[i].Path);
            }

            var reqMethods = new List<string>();
            var reqPaths = new List<string>();
            foreach (string line in File.ReadAllText(args[0], Encoding.UTF8).Split('\n'))
            {
                if (line.Length == 0)
                {
                    continue;
                }

                int tab = line.IndexOf('\t');
                reqMethods.Add(line.Substring(0, tab));
                reqPaths.Add(line.Substring(tab + 1));
            }

            long warmMs = long.Parse(args[1], CultureInfo.InvariantCulture);
            long minMs = long.Parse(args[2], CultureInfo.InvariantCulture);
            int samples = int.Parse(args[3], CultureInfo.InvariantCulture);
            string[] m = reqMethods.ToArray();
            string[] p = reqPaths.ToArray();
            int n = m.Length;
            long sink = 0;
            Action classifyPass = () =>
            {
                for (int i = 0; i < n; i++)
                {
                    if (RetryPolicies.Classify(m[i], p[i]).Operation != null)
                    {
                        sink++;
                    }
                }
            };
            Action scanPass = () =>
            {
                for (int i = 0; i < n; i++)
                {
                    sink += Scan(m[i], p[i]);
                }
            };
            long classifyRounds = Calibrate(warmMs, minMs, classifyPass);
            long scanRounds = Calibrate(warmMs, minMs, scanPass);

            // Samples alternate between the two, so that both see the same machine.
            var classifySamples = new double[samples];
            var scanSamples = new double[samples];
            for (int s = 0; s < samples; s++)
            {
                classifySamples[s] = Sample(n, classifyRounds, classifyPass);
                scanSamples[s] = Sample(n, scanRounds, scanPass);
            }

            double classifyNs = Median(classifySamples);
            double scanNs = Median(scanSamples);

            // Bytes allocated per classify call, counted after the timing over passes of the whole mix
            // (mono and .NET both keep the per-thread counter).
            const int AllocPasses = 20;
            classifyPass();
            long allocBefore = GC.GetAllocatedBytesForCurrentThread();
            for (int r = 0; r < AllocPasses; r++)
            {
                classifyPass();
            }

            long allocated = GC.GetAllocatedBytesForCurrentThread() - allocBefore;
            double allocPerCall = n == 0 ? 0.0 : (double)allocated / ((double)AllocPasses * n);

            var index = new Dictionary<Operation, int>();
            for (int i = 0; i < ops.Count; i++)
            {
                index[ops[i]] = i;
            }

            var classified = new List<string>(n);
            var classes = new StringBuilder(n);
            var scanned = new List<string>(n);
            for (int i = 0; i < n; i++)
            {
                var c = RetryPolicies.Classify(m[i], p[i]);
                classified.Add(c.Operation == null ? "-1" : index[c.Operation].ToString(CultureInfo.InvariantCulture));
                classes.Append(Letter(c.ReplayClass));
                scanned.Add(Scan(m[i], p[i]).ToString(CultureInfo.InvariantCulture));
            }

            var output = new StringBuilder();
            output.Append(string.Format(CultureInfo.InvariantCulture, "classify_ns {0:F2}\nscan_ns {1:F2}\n", classifyNs, scanNs));
            output.Append(string.Format(CultureInfo.InvariantCulture, "classify_alloc_bytes {0:F2}\n", allocPerCall));
            output.Append("classify_ops ").Append(string.Join(",", classified)).Append('\n');
            output.Append("classify_classes ").Append(classes).Append('\n');
            output.Append("scan_ops ").Append(string.Join(",", scanned)).Append('\n');
            output.Append("sink ").Append(sink.ToString(CultureInfo.InvariantCulture)).Append('\n');
            Console.Out.Write(output.ToString());
            return 0;
        }
    }
}
