// Conformance harness for the C# module retrygen generates (see conformance/README.md).
// Run as: mono harness.exe CASEFILE
// Compiled together with the module rendered with default options (namespace Retrygen.Generated,
// class RetryPolicies). Base class library only.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Text;
using Retrygen.Generated;

namespace Retrygen.Conformance
{
    /// <summary>A malformed case file.</summary>
    internal sealed class MalformedCaseException : Exception
    {
        public MalformedCaseException(string message)
            : base(message)
        {
        }
    }

    /// <summary>Reads a case file and prints one result line per case.</summary>
    internal static class Harness
    {
        private static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);

        public static int Main(string[] args)
        {
            if (args.Length != 1)
            {
                Console.Error.WriteLine("usage: harness.exe CASEFILE");
                return 2;
            }

            var output = new StringBuilder();
            try
            {
                string text = Utf8(File.ReadAllBytes(args[0]), "the case file");
                string[] lines = text.Split('\n');
                for (int number = 0; number < lines.Length; number++)
                {
                    if (lines[number].Length == 0)
                    {
                        continue;
                    }

                    try
                    {
                        RunCase(lines[number].Split('\t'), output);
                    }
                    catch (MalformedCaseException e)
                    {
                        throw new MalformedCaseException("line " + (number + 1).ToString(CultureInfo.InvariantCulture) + ": " + e.Message);
                    }
                }
            }
            catch (MalformedCaseException e)
            {
                Console.Error.WriteLine("harness: " + e.Message);
                return 1;
            }

            byte[] bytes = Encoding.UTF8.GetBytes(output.ToString());
            using (Stream stdout = Console.OpenStandardOutput())
            {
                stdout.Write(bytes, 0, bytes.Length);
            }

            return 0;
        }

        private static void RunCase(string[] f, StringBuilder output)
        {
            switch (f[0])
            {
                case "D":
                    DecideCase(f, output);
                    break;
                case "C":
                    {
                        ExpectFields(f, 4);
                        Classification result = RetryPolicies.Classify(Unhex(f[2]), Unhex(f[3]));
                        Line(output, "C", f[1], result.ReplayClass.ToWireName(), HexOrAbsent(result.Operation == null ? null : result.Operation.OperationId));
                        break;
                    }

                case "I":
                    {
                        ExpectFields(f, 3);
                        Operation operation = RetryPolicies.OperationById(Unhex(f[2]));
                        if (operation == null)
                        {
                            Line(output, "I", f[1], "-", "-");
                        }
                        else
                        {
                            Line(output, "I", f[1], Hex(operation.Method), Hex(operation.Path));
                        }

                        break;
                    }

                case "N":
                    ExpectFields(f, 4);
                    Line(output, "N", f[1], RetryPolicies.IsNonReplayable(Unhex(f[2]), Unhex(f[3])) ? "1" : "0");
                    break;
                case "T":
                    ExpectFields(f, 1);
                    Tables(output);
                    break;
                default:
                    throw new MalformedCaseException("unknown line type " + f[0]);
            }
        }

        private static void DecideCase(string[] f, StringBuilder output)
        {
            ExpectFields(f, 22);
            var policy = new RetryPolicy(
                maxRetries: Int(f[2]),
                initialBackoffMs: Long(f[3]),
                maxBackoffMs: Long(f[4]),
                multiplier: Double(f[5]),
                jitter: Parse<Jitter>(f[6], WireNames.ToWireName),
                retryableStatuses: Statuses(f[7]),
                rejectedStatuses: Statuses(f[8]),
                retryAfterCapMs: Long(f[9]),
                deadlineMs: f[10] == "-" ? (long?)null : Long(f[10]));
            ReplayClass replayClass = Parse<ReplayClass>(f[11], WireNames.ToWireName);
            bool hasKey;
            switch (f[12])
            {
                case "1":
                    hasKey = true;
                    break;
                case "0":
                    hasKey = false;
                    break;
                default:
                    throw new MalformedCaseException("has_key must be 1 or 0, not " + f[12]);
            }

            Outcome outcome = f[13] == "status"
                ? Outcome.FromStatus(Int(f[14]), OptionalUnhex(f[15]), OptionalUnhex(f[16]))
                : Outcome.FromFailure(Parse<FailureKind>(f[13], WireNames.ToWireName));
            var input = new DecisionInput(replayClass, hasKey, outcome, Int(f[17]), Long(f[18]), Long(f[19]), Long(f[20]), Double(f[21]));
            Decision decision = RetryPolicies.Decide(policy, input);
            Line(output, "D", f[1], decision.Retry ? "1" : "0", decision.DelayMs.ToString(CultureInfo.InvariantCulture), decision.Reason.ToWireName());
        }

        private static void Tables(StringBuilder output)
        {
            Line(output, "B", Hex(RetryPolicies.BasePath), Hex(RetryPolicies.SourceName));
            RetryPolicy p = RetryPolicy.Default;
            Line(
                output,
                "P",
                p.MaxRetries.ToString(CultureInfo.InvariantCulture),
                p.InitialBackoffMs.ToString(CultureInfo.InvariantCulture),
                p.MaxBackoffMs.ToString(CultureInfo.InvariantCulture),
                Bits(p.Multiplier),
                p.Jitter.ToWireName(),
                JoinStatuses(p.RetryableStatuses),
                JoinStatuses(p.RejectedStatuses),
                p.RetryAfterCapMs.ToString(CultureInfo.InvariantCulture),
                p.DeadlineMs.HasValue ? p.DeadlineMs.Value.ToString(CultureInfo.InvariantCulture) : "-");
            for (int i = 0; i < RetryPolicies.Operations.Count; i++)
            {
                Operation operation = RetryPolicies.Operations[i];
                Line(
                    output,
                    "O",
                    i.ToString(CultureInfo.InvariantCulture),
                    Hex(operation.Method),
                    Hex(operation.Path),
                    HexOrAbsent(operation.OperationId),
                    operation.ReplayClass.ToWireName(),
                    Hex(operation.Pattern.ToString()));
            }
        }

        private static void Line(StringBuilder output, params string[] fields)
        {
            output.Append(string.Join("\t", fields)).Append('\n');
        }

        private static void ExpectFields(string[] fields, int count)
        {
            if (fields.Length != count)
            {
                throw new MalformedCaseException(
                    fields[0] + " line has " + fields.Length.ToString(CultureInfo.InvariantCulture) + " fields, expected " + count.ToString(CultureInfo.InvariantCulture));
            }
        }

        private static T Parse<T>(string name, Func<T, string> wireName)
        {
            foreach (T value in (T[])Enum.GetValues(typeof(T)))
            {
                if (wireName(value) == name)
                {
                    return value;
                }
            }

            throw new MalformedCaseException("unknown " + typeof(T).Name + " " + name);
        }

        /// <summary>A decimal integer: an optional <c>-</c> and ASCII digits.</summary>
        private static long Long(string text)
        {
            int start = text.StartsWith("-", StringComparison.Ordinal) ? 1 : 0;
            if (text.Length == start)
            {
                throw new MalformedCaseException("not a decimal integer: " + text);
            }

            for (int i = start; i < text.Length; i++)
            {
                if (text[i] < '0' || text[i] > '9')
                {
                    throw new MalformedCaseException("not a decimal integer: " + text);
                }
            }

            long value;
            if (!long.TryParse(text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out value))
            {
                throw new MalformedCaseException("not a 64-bit integer: " + text);
            }

            return value;
        }

        private static int Int(string text)
        {
            long value = Long(text);
            if (value < int.MinValue || value > int.MaxValue)
            {
                throw new MalformedCaseException("not a 32-bit integer: " + text);
            }

            return (int)value;
        }

        private static List<int> Statuses(string text)
        {
            var statuses = new List<int>();
            if (text.Length > 0)
            {
                foreach (string status in text.Split(','))
                {
                    statuses.Add(Int(status));
                }
            }

            return statuses;
        }

        private static string JoinStatuses(IReadOnlyList<int> statuses)
        {
            var parts = new string[statuses.Count];
            for (int i = 0; i < parts.Length; i++)
            {
                parts[i] = statuses[i].ToString(CultureInfo.InvariantCulture);
            }

            return string.Join(",", parts);
        }

        /// <summary>A double from the 16 lower-case hex digits of its IEEE 754 bits.</summary>
        private static double Double(string text)
        {
            if (text.Length != 16 || !IsLowerHex(text))
            {
                throw new MalformedCaseException("not 16 hex digits of a double: " + text);
            }

            return BitConverter.Int64BitsToDouble(long.Parse(text, NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture));
        }

        private static string Bits(double value)
        {
            return BitConverter.DoubleToInt64Bits(value).ToString("x16", CultureInfo.InvariantCulture);
        }

        private static string OptionalUnhex(string text)
        {
            return text == "-" ? null : Unhex(text);
        }

        private static string Unhex(string text)
        {
            if (text.Length % 2 != 0 || !IsLowerHex(text))
            {
                throw new MalformedCaseException("not lower-case hex: " + text);
            }

            var bytes = new byte[text.Length / 2];
            for (int i = 0; i < bytes.Length; i++)
            {
                bytes[i] = (byte)((HexDigit(text[2 * i]) * 16) + HexDigit(text[(2 * i) + 1]));
            }

            return Utf8(bytes, "hex field " + text);
        }

        private static bool IsLowerHex(string text)
        {
            foreach (char c in text)
            {
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                {
                    return false;
                }
            }

            return true;
        }

        private static int HexDigit(char c)
        {
            return c <= '9' ? c - '0' : c - 'a' + 10;
        }

        private static string Utf8(byte[] bytes, string what)
        {
            try
            {
                return StrictUtf8.GetString(bytes);
            }
            catch (ArgumentException)
            {
                throw new MalformedCaseException(what + " is not valid UTF-8");
            }
        }

        private static string Hex(string text)
        {
            byte[] bytes = StrictUtf8.GetBytes(text);
            var builder = new StringBuilder(bytes.Length * 2);
            foreach (byte b in bytes)
            {
                builder.Append("0123456789abcdef"[b >> 4]).Append("0123456789abcdef"[b & 0xf]);
            }

            return builder.ToString();
        }

        private static string HexOrAbsent(string text)
        {
            return text == null ? "-" : Hex(text);
        }
    }
}
