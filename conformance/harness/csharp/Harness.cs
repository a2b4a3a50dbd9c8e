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
            try
            {
                RunLine(f, output);
            }
            catch (InvalidInputException e)
            {
                // The contract's invalid-input error: its message key instead of the line's output.
                Line(output, "X", f.Length > 1 ? f[1] : string.Empty, e.Key);
            }
        }

        private static void RunLine(string[] f, StringBuilder output)
        {
            switch (f[0])
            {
                case "D":
                    DecideCase(f, output);
                    break;
                case "D2":
                    Decide2Case(f, output);
                    break;
                case "K":
                    BudgetCase(f, output);
                    break;
                case "C":
                    {
                        ExpectFields(f, 4);
                        Classification result = RetryPolicies.Classify(Unhex(f[2]), Unhex(f[3]));
                        Line(output, "C", f[1], result.ReplayClass.ToWireName(), OperationIdOf(result));
                        break;
                    }

                case "C2":
                    {
                        ExpectFields(f, 6);
                        Classifier classifier = RetryPolicies.CreateClassifier(f[2] == "-" ? null : Wtf8(f[2]), Name<UnknownOperationClass>(f[3], WireNames.TryParse));
                        Classification result = classifier.Classify(Wtf8(f[4]), Wtf8(f[5]));
                        Line(output, "C2", f[1], result.ReplayClass.ToWireName(), OperationIdOf(result));
                        break;
                    }

                case "O":
                    {
                        ExpectFields(f, 4);
                        Line(output, "O", f[1], RetryRuntime.InScope(Wtf8(f[2]), Wtf8(f[3])) ? "1" : "0");
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

                case "L":
                    {
                        ExpectFields(f, 4);
                        SafeListEntry entry = RetryPolicies.FindSafeListEntry(Unhex(f[2]), Unhex(f[3]));
                        Line(output, "L", f[1], entry == null ? "0" : "1", entry == null ? "-" : HexOrAbsent(entry.IdempotencyHeader));
                        break;
                    }

                case "H":
                    {
                        if (f.Length < 3 || (f.Length - 3) % 2 != 0)
                        {
                            throw new MalformedCaseException("H line needs an operationId and name/value pairs");
                        }

                        var headers = new List<KeyValuePair<string, string>>();
                        for (int i = 3; i < f.Length; i += 2)
                        {
                            headers.Add(new KeyValuePair<string, string>(Unhex(f[i]), Unhex(f[i + 1])));
                        }

                        Operation operation = RetryPolicies.OperationById(Unhex(f[2]));
                        Line(output, "H", f[1], RetryPolicies.HasIdempotencyKey(operation, headers) ? "1" : "0");
                        break;
                    }

                case "E":
                    {
                        ExpectFields(f, 8);
                        Classifier classifier = f[2] == "-" ? RetryPolicies.DefaultClassifier : RetryPolicies.CreateClassifier(Wtf8(f[2]));
                        string method = Wtf8(f[3]);
                        Classification classification = classifier.Classify(method, Wtf8(f[4]));
                        RetryEvent e = RetryEvent.Create(classification, method, Long(f[5]), Reason(f[7]), Long(f[6]));
                        Line(
                            output,
                            "E",
                            f[1],
                            Decimal(e.Attempt),
                            e.Reason.ToWireName(),
                            Decimal(e.DelayMs),
                            Hex(e.Method),
                            HexOrAbsent(e.PathTemplate),
                            HexOrAbsent(e.OperationId));
                        break;
                    }

                case "T2":
                    ExpectFields(f, 1);
                    Tables(output);
                    break;
                case "D3":
                    Decide3Case(f, output);
                    break;
                case "K3":
                    Budget3Case(f, output);
                    break;
                case "HP":
                    {
                        if ((f.Length - 2) % 2 != 0)
                        {
                            throw new MalformedCaseException("HP line needs name/value pairs");
                        }

                        var headers = new List<KeyValuePair<string, string>>();
                        for (int i = 2; i < f.Length; i += 2)
                        {
                            headers.Add(new KeyValuePair<string, string>(Wtf8(f[i]), Wtf8(f[i + 1])));
                        }

                        Line(output, "HP", f[1], RetryRuntime.HasPrecondition(headers) ? "1" : "0");
                        break;
                    }

                case "Q":
                    {
                        ExpectFields(f, 5);
                        string type = RetryRuntime.ProblemTypeOf(f[2] == "-" ? null : Wtf8(f[2]), Bytes(f[4]), Flag(f[3], "complete"));
                        Line(output, "Q", f[1], type == null ? "-" : Hex(type));
                        break;
                    }

                case "SE":
                    {
                        ExpectFields(f, 3);
                        var scanner = new EventStreamScanner();
                        byte[] stream = Bytes(f[2]);

                        // Fed in two pieces, so that a line or a CRLF split across reads is covered too.
                        int half = stream.Length / 2;
                        scanner.Feed(stream, 0, half);
                        scanner.Feed(stream, half, stream.Length - half);
                        Line(output, "SE", f[1], Decimal(scanner.CompleteBytes), Hex(scanner.LastEventId), HexOrAbsent(scanner.Retry));
                        break;
                    }

                case "F":
                    {
                        ExpectFields(f, 4);
                        IdempotencyKeyFormat format = WireNames.ParseIdempotencyKeyFormat(f[2]);
                        Line(output, "F", f[1], Hex(RetryRuntime.IdempotencyKeyValue(format, Unhex(f[3]))));
                        break;
                    }

                default:
                    throw new MalformedCaseException("unknown line type " + f[0]);
            }
        }

        /// <summary>A v1 decision: a v2 decision whose new policy keys are neutral, without a budget.</summary>
        private static void DecideCase(string[] f, StringBuilder output)
        {
            ExpectFields(f, 22);
            var policy = new RetryPolicy(
                maxRetries: Int(f[2]),
                initialBackoffMs: Long(f[3]),
                maxBackoffMs: Long(f[4]),
                multiplier: Double(f[5]),
                jitter: Name<Jitter>(f[6], WireNames.TryParse),
                retryableStatuses: Statuses(f[7]),
                rejectedStatuses: Statuses(f[8]),
                retryAfterCapMs: Long(f[9]),
                deadlineMs: f[10] == "-" ? (long?)null : Long(f[10]),
                retryOnlyWithServerDelay: new int[0],
                keyInFlightStatuses: new int[0],
                keyReusedStatuses: new int[0],
                serverDirectiveHeaders: new string[0],
                retryAfterOverCap: OverCapMode.Refuse,
                unknownOperationClass: UnknownOperationClass.MethodDefault,
                throttlingStatuses: ContractThrottlingStatuses,
                throttlingInitialBackoffMs: null,
                budgetThrottlingCost: null,
                stopProblemTypes: ContractStopProblemTypes,
                retryProblemTypes: new string[0],
                idempotencyKeyFormat: IdempotencyKeyFormat.Uuid);
            ReplayClass replayClass = Name<ReplayClass>(f[11], WireNames.TryParse);
            bool hasKey = Flag(f[12], "has_key");
            Outcome outcome = f[13] == "status"
                ? Outcome.FromStatus(Int(f[14]), OptionalUnhex(f[15]), OptionalUnhex(f[16]))
                : Outcome.FromFailure(Name<FailureKind>(f[13], WireNames.TryParse));
            var input = new DecisionInput(replayClass, hasKey, outcome, Long(f[17]), Long(f[18]), Long(f[19]), Long(f[20]), Double(f[21]));
            Decision decision = RetryPolicies.Decide(policy, input);
            Line(output, "D", f[1], decision.Retry ? "1" : "0", Decimal(decision.DelayMs), decision.Reason.ToWireName());
        }

        /// <summary>A v2 decision: the 19 policy fields, then the input.</summary>
        private static void Decide2Case(string[] f, StringBuilder output)
        {
            ExpectFields(f, 35);
            RetryPolicy policy = Policy2(f, 2);
            ReplayClass replayClass = Name<ReplayClass>(f[21], WireNames.TryParse);
            bool hasKey = Flag(f[22], "has_key");
            Outcome outcome = f[23] == "status"
                ? Outcome.FromStatus(Int(f[24]), OptionalUnhex(f[25]), OptionalUnhex(f[26]), OptionalUnhex(f[27]))
                : Outcome.FromFailure(Name<FailureKind>(f[23], WireNames.TryParse));
            long? tokens = f[33] == "-" ? (long?)null : Long(f[33]);
            var input = new DecisionInput(
                replayClass, hasKey, outcome, Long(f[28]), Long(f[29]), Long(f[30]), Long(f[31]), Double(f[32]), tokens, Flag(f[34], "timed_out"));
            Decision decision = RetryPolicies.Decide(policy, input);
            Line(
                output,
                "D2",
                f[1],
                decision.Retry ? "1" : "0",
                Decimal(decision.DelayMs),
                decision.Reason.ToWireName(),
                decision.BudgetTokens.HasValue ? Decimal(decision.BudgetTokens.Value) : "-");
        }

        /// <summary>A contract v3 decision (docs/contract.md): the 25 policy fields, then the input.</summary>
        private static void Decide3Case(string[] f, StringBuilder output)
        {
            ExpectFields(f, 46);
            RetryPolicy policy = Policy3(f, 2);
            ReplayClass replayClass = Name<ReplayClass>(f[27], WireNames.TryParse);
            bool hasKey = Flag(f[28], "has_key");
            bool hasPrecondition = Flag(f[29], "has_precondition");
            bool resumable = Flag(f[30], "resumable");
            bool hasLastEventId = Flag(f[31], "has_last_event_id");
            string streamRetry = f[32] == "-" ? null : Wtf8(f[32]);
            string problemType = f[33] == "-" ? null : Wtf8(f[33]);
            Outcome outcome = f[34] == "status"
                ? Outcome.FromStatus(Int(f[35]), OptionalUnhex(f[36]), OptionalUnhex(f[37]), OptionalUnhex(f[38]))
                : Outcome.FromFailure(Name<FailureKind>(f[34], WireNames.TryParse));
            long? tokens = f[44] == "-" ? (long?)null : Long(f[44]);
            var input = new DecisionInput(
                replayClass,
                hasKey,
                outcome,
                Long(f[39]),
                Long(f[40]),
                Long(f[41]),
                Long(f[42]),
                Double(f[43]),
                tokens,
                Flag(f[45], "timed_out"),
                hasPrecondition,
                resumable,
                hasLastEventId,
                streamRetry,
                problemType);
            Decision decision = RetryPolicies.Decide(policy, input);
            Line(
                output,
                "D3",
                f[1],
                decision.Retry ? "1" : "0",
                Decimal(decision.DelayMs),
                decision.Reason.ToWireName(),
                decision.BudgetTokens.HasValue ? Decimal(decision.BudgetTokens.Value) : "-",
                decision.Throttled ? "1" : "0",
                decision.ServerDelayMs.HasValue ? Decimal(decision.ServerDelayMs.Value) : "-");
        }

        /// <summary>A contract v3 budget sequence: the whole policy, and the throttling kind.</summary>
        private static void Budget3Case(string[] f, StringBuilder output)
        {
            ExpectFields(f, 28);
            var cell = new RetryBudgetCell(Policy3(f, 2));
            long initial = cell.Tokens;
            var results = new List<string>();
            foreach (string ev in f[27].Length == 0 ? new string[0] : f[27].Split(','))
            {
                if (ev.StartsWith("s", StringComparison.Ordinal))
                {
                    results.Add("s" + Decimal(cell.RecordSuccess(Long(ev.Substring(1)))));
                    continue;
                }

                string kind = ev == "r" ? "retry" : ev == "t" ? "timeout" : ev == "h" ? "throttling" : ev.StartsWith("a", StringComparison.Ordinal) ? Unhex(ev.Substring(1)) : null;
                if (kind == null)
                {
                    throw new MalformedCaseException("unknown budget event " + ev);
                }

                BudgetAcquisition result = cell.TryAcquire(Name<BudgetKind>(kind, WireNames.TryParse));
                results.Add((result.Allowed ? "y" : "n") + Decimal(result.Tokens));
            }

            Line(output, "K3", f[1], Decimal(initial), string.Join(",", results));
        }

        /// <summary>The policy of the 25 <c>P3</c> fields from <paramref name="at"/>, built unchecked: the runtime checks it.</summary>
        private static RetryPolicy Policy3(string[] f, int at)
        {
            return new RetryPolicy(
                maxRetries: Int(f[at]),
                initialBackoffMs: Long(f[at + 1]),
                maxBackoffMs: Long(f[at + 2]),
                multiplier: Double(f[at + 3]),
                jitter: Name<Jitter>(f[at + 4], WireNames.TryParse),
                retryableStatuses: Statuses(f[at + 5]),
                rejectedStatuses: Statuses(f[at + 6]),
                retryAfterCapMs: Long(f[at + 7]),
                deadlineMs: f[at + 8] == "-" ? (long?)null : Long(f[at + 8]),
                retryOnlyWithServerDelay: Statuses(f[at + 9]),
                keyInFlightStatuses: Statuses(f[at + 10]),
                keyReusedStatuses: Statuses(f[at + 11]),
                serverDirectiveHeaders: HexList(f[at + 12]),
                retryAfterOverCap: Name<OverCapMode>(f[at + 13], WireNames.TryParse),
                unknownOperationClass: Name<UnknownOperationClass>(f[at + 14], WireNames.TryParse),
                budgetCapacity: Long(f[at + 15]),
                budgetRetryCost: Long(f[at + 16]),
                budgetTimeoutCost: Long(f[at + 17]),
                budgetSuccessRefund: Long(f[at + 18]),
                throttlingStatuses: Statuses(f[at + 19]),
                throttlingInitialBackoffMs: f[at + 20] == "-" ? (long?)null : Long(f[at + 20]),
                budgetThrottlingCost: f[at + 21] == "-" ? (long?)null : Long(f[at + 21]),
                stopProblemTypes: HexList(f[at + 22]),
                retryProblemTypes: HexList(f[at + 23]),
                idempotencyKeyFormat: Name<IdempotencyKeyFormat>(f[at + 24], WireNames.TryParse));
        }

        /// <summary>A list of hex strings joined by <c>,</c>; <c>-</c> is the empty list.</summary>
        private static List<string> HexList(string field)
        {
            var list = new List<string>();
            if (field != "-")
            {
                foreach (string item in field.Split(','))
                {
                    list.Add(Wtf8(item));
                }
            }

            return list;
        }

        /// <summary>
        /// Contract v3's keys at the contract's defaults, for the v1 and v2 cases: a constructor's
        /// defaults are the spec's values, and a spec's v3 keys (a throttling base, a preset) must
        /// not reach the cases of the contracts that know none.
        /// </summary>
        private static readonly int[] ContractThrottlingStatuses = { 429 };

        /// <summary>The contract's default <c>stop_problem_types</c> (docs/contract.md, section 9).</summary>
        private static readonly string[] ContractStopProblemTypes =
        {
            "https://iana.org/assignments/http-problem-types#quota-exceeded",
            "https://iana.org/assignments/http-problem-types#abnormal-usage-detected",
        };

        /// <summary>A retry budget sequence, run on one client's cell.</summary>
        private static void BudgetCase(string[] f, StringBuilder output)
        {
            ExpectFields(f, 7);
            var policy = new RetryPolicy(budgetCapacity: Long(f[2]), budgetRetryCost: Long(f[3]), budgetTimeoutCost: Long(f[4]), budgetSuccessRefund: Long(f[5]), budgetThrottlingCost: null);
            var cell = new RetryBudgetCell(policy);
            long initial = cell.Tokens;
            var results = new List<string>();
            foreach (string ev in f[6].Length == 0 ? new string[0] : f[6].Split(','))
            {
                if (ev == "r" || ev == "t" || ev.StartsWith("a", StringComparison.Ordinal))
                {
                    string kind = ev == "r" ? "retry" : ev == "t" ? "timeout" : Unhex(ev.Substring(1));
                    BudgetAcquisition result = cell.TryAcquire(Name<BudgetKind>(kind, WireNames.TryParse));
                    results.Add((result.Allowed ? "y" : "n") + Decimal(result.Tokens));
                }
                else if (ev.StartsWith("s", StringComparison.Ordinal))
                {
                    results.Add("s" + Decimal(cell.RecordSuccess(Long(ev.Substring(1)))));
                }
                else
                {
                    throw new MalformedCaseException("unknown budget event " + ev);
                }
            }

            Line(output, "K", f[1], Decimal(initial), string.Join(",", results));
        }

        /// <summary>The policy of the 19 <c>P2</c> fields from <paramref name="at"/>, built unchecked: the runtime checks it.</summary>
        private static RetryPolicy Policy2(string[] f, int at)
        {
            var headers = new List<string>();
            if (f[at + 12] != "-")
            {
                foreach (string name in f[at + 12].Split(','))
                {
                    headers.Add(Unhex(name));
                }
            }

            return new RetryPolicy(
                maxRetries: Int(f[at]),
                initialBackoffMs: Long(f[at + 1]),
                maxBackoffMs: Long(f[at + 2]),
                multiplier: Double(f[at + 3]),
                jitter: Name<Jitter>(f[at + 4], WireNames.TryParse),
                retryableStatuses: Statuses(f[at + 5]),
                rejectedStatuses: Statuses(f[at + 6]),
                retryAfterCapMs: Long(f[at + 7]),
                deadlineMs: f[at + 8] == "-" ? (long?)null : Long(f[at + 8]),
                retryOnlyWithServerDelay: Statuses(f[at + 9]),
                keyInFlightStatuses: Statuses(f[at + 10]),
                keyReusedStatuses: Statuses(f[at + 11]),
                serverDirectiveHeaders: headers,
                retryAfterOverCap: Name<OverCapMode>(f[at + 13], WireNames.TryParse),
                unknownOperationClass: Name<UnknownOperationClass>(f[at + 14], WireNames.TryParse),
                budgetCapacity: Long(f[at + 15]),
                budgetRetryCost: Long(f[at + 16]),
                budgetTimeoutCost: Long(f[at + 17]),
                budgetSuccessRefund: Long(f[at + 18]),
                throttlingStatuses: ContractThrottlingStatuses,
                throttlingInitialBackoffMs: null,
                budgetThrottlingCost: null,
                stopProblemTypes: ContractStopProblemTypes,
                retryProblemTypes: new string[0],
                idempotencyKeyFormat: IdempotencyKeyFormat.Uuid);
        }

        private static void Tables(StringBuilder output)
        {
            Line(output, "B2", Hex(RetryPolicies.BasePath), Hex(RetryPolicies.SourceName));
            RetryPolicy p = RetryPolicy.Default;
            var headers = new List<string>();
            foreach (string name in p.ServerDirectiveHeaders)
            {
                headers.Add(Hex(name));
            }

            Line(
                output,
                "P2",
                Decimal(p.MaxRetries),
                Decimal(p.InitialBackoffMs),
                Decimal(p.MaxBackoffMs),
                Bits(p.Multiplier),
                p.Jitter.ToWireName(),
                JoinStatuses(p.RetryableStatuses),
                JoinStatuses(p.RejectedStatuses),
                Decimal(p.RetryAfterCapMs),
                p.DeadlineMs.HasValue ? Decimal(p.DeadlineMs.Value) : "-",
                JoinStatuses(p.RetryOnlyWithServerDelay),
                JoinStatuses(p.KeyInFlightStatuses),
                JoinStatuses(p.KeyReusedStatuses),
                headers.Count == 0 ? "-" : string.Join(",", headers),
                p.RetryAfterOverCap.ToWireName(),
                p.UnknownOperationClass.ToWireName(),
                Decimal(p.BudgetCapacity),
                Decimal(p.BudgetRetryCost),
                Decimal(p.BudgetTimeoutCost),
                Decimal(p.BudgetSuccessRefund));
            IReadOnlyList<Operation> operations = RetryPolicies.Operations;
            for (int i = 0; i < operations.Count; i++)
            {
                Operation operation = operations[i];
                Line(
                    output,
                    "O2",
                    Decimal(i),
                    Hex(operation.Method),
                    Hex(operation.Path),
                    HexOrAbsent(operation.OperationId),
                    operation.ReplayClass.ToWireName(),
                    HexOrAbsent(operation.IdempotencyHeader));
            }

            foreach (SafeListEntry entry in RetryPolicies.NonReplayableOperations)
            {
                int index = 0;
                while (!ReferenceEquals(operations[index], entry.Operation))
                {
                    index++;
                }

                Line(output, "L2", Decimal(index), Hex(entry.Method), Hex(entry.Pattern.ToString()), HexOrAbsent(entry.IdempotencyHeader));
            }
        }

        private static string OperationIdOf(Classification result)
        {
            return HexOrAbsent(result.Operation == null ? null : result.Operation.OperationId);
        }

        private delegate bool TryParser<T>(string name, out T value);

        /// <summary>
        /// A name read with the runtime's parser; an unknown one becomes a value outside the enum, which the runtime
        /// rejects with its key when it checks that value in the contract's order.
        /// </summary>
        private static T Name<T>(string name, TryParser<T> parse)
        {
            T value;
            return parse(name, out value) ? value : (T)Enum.ToObject(typeof(T), -1);
        }

        private static DecisionReason Reason(string name)
        {
            foreach (DecisionReason reason in (DecisionReason[])Enum.GetValues(typeof(DecisionReason)))
            {
                if (reason.ToWireName() == name)
                {
                    return reason;
                }
            }

            throw new MalformedCaseException("unknown reason " + name);
        }

        private static bool Flag(string text, string what)
        {
            switch (text)
            {
                case "1":
                    return true;
                case "0":
                    return false;
                default:
                    throw new MalformedCaseException(what + " must be 1 or 0, not " + text);
            }
        }

        private static string Decimal(long value)
        {
            return value.ToString(CultureInfo.InvariantCulture);
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

        /// <summary>A 64-bit integer handed to an <c>int</c> parameter: saturated, so that the runtime still rejects it with its key.</summary>
        private static int Int(string text)
        {
            long value = Long(text);
            return value < int.MinValue ? int.MinValue : value > int.MaxValue ? int.MaxValue : (int)value;
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

        /// <summary>
        /// Hex of WTF-8: UTF-8 whose three-byte forms may also encode a lone surrogate (<c>ed a0..bf 80..bf</c>), built
        /// into the UTF-16 string by hand.
        /// </summary>
        private static string Wtf8(string text)
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

            var builder = new StringBuilder();
            int at = 0;
            while (at < bytes.Length)
            {
                int b = bytes[at];
                int count = b < 0x80 ? 0 : b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : -1;
                if (count < 0 || at + count >= bytes.Length)
                {
                    throw new MalformedCaseException("not WTF-8: " + text);
                }

                int codePoint = count == 0 ? b : b & (0x3F >> count);
                for (int k = 1; k <= count; k++)
                {
                    codePoint = (codePoint << 6) | (bytes[at + k] & 0x3F);
                }

                if (codePoint < 0x10000)
                {
                    builder.Append((char)codePoint);
                }
                else
                {
                    codePoint -= 0x10000;
                    builder.Append((char)(0xD800 + (codePoint >> 10))).Append((char)(0xDC00 + (codePoint & 0x3FF)));
                }
                at += count + 1;
            }

            return builder.ToString();
        }

        /// <summary>The bytes of a hex field, whatever they hold.</summary>
        private static byte[] Bytes(string text)
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

            return bytes;
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
