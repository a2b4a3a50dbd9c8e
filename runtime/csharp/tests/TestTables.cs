// A hand-written tables file in the shape retrygen renders (templates/csharp/tables.j2), for the
// runtime's unit tests: a small operation list chosen to exercise the matcher, and the contract's
// default policy.

namespace Retrygen.Generated
{
    using System.Collections.Generic;

    /// <summary>The tables of a small test API with the base path <c>/api</c>.</summary>
    public static class TestTables
    {
        /// <summary>The base path.</summary>
        public const string BasePath = "/api";

        /// <summary>The matcher built from <see cref="Rows"/>.</summary>
        public static readonly OperationTable Table = new OperationTable(BasePath, Rows());

        /// <summary>Builds the operations again, for tests that need a fresh table.</summary>
        /// <returns>The operations in table order.</returns>
        public static Operation[] Rows()
        {
            var rows = new List<Operation>();
            rows.Add(new Operation("GET", "/", "/", "root", ReplayClass.Idempotent, null));
            rows.Add(new Operation("POST", "/users", "/users", "createUser", ReplayClass.NonReplayable, null));
            rows.Add(new Operation("GET", "/users/me", "/users/me", "getMe", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/users/me/settings", "/users/me/settings", "getMySettings", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/users/{id}", "/users/{id}", "getUser", ReplayClass.Idempotent, null));
            rows.Add(new Operation("PATCH", "/users/{id}", "/users/{id}", "updateUser", ReplayClass.Keyed, "Idempotency-Key"));
            rows.Add(new Operation("GET", "/users/{id}/posts", "/users/{id}/posts", "listPosts", ReplayClass.Idempotent, null));
            rows.Add(new Operation("POST", "/users/{id}/posts/", "/users/{id}/posts/", "createPost", ReplayClass.NonReplayable, null));
            rows.Add(new Operation("GET", "/files/{name}.{ext}", "/files/{name}.{ext}", "getFile", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/files/{name}.tar.gz", "/files/{name}.tar.gz", "getTarball", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/files/v{version}", "/files/v{version}", "getVersion", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/tie/{a}x", "/tie/{a}x", "paramFirst", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/tie/x{a}", "/tie/x{a}", "literalFirst", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/order/{a}\U0001F600{b}", "/order/{a}\U0001F600{b}", "astral", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/order/{a}\uE000{b}a{c}", "/order/{a}\uE000{b}a{c}", "privateUse", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/enc/a%20b", "/enc/a%20b", "encodedLiteral", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/enc/{x}", "/enc/{x}", "encodedParam", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/dup/{a}", "/dup/{a}", "firstClaim", ReplayClass.Idempotent, null));
            rows.Add(new Operation("GET", "/dup/{b}", "/dup/{b}", "secondClaim", ReplayClass.NoRetry, null));
            rows.Add(new Operation("GET", "/gap//end", "/gap//end", "emptySegment", ReplayClass.Idempotent, null));
            rows.Add(new Operation("POST", "/oauth/token", "/oauth/token#refresh", "refreshToken", ReplayClass.NonReplayable, null));
            rows.Add(new Operation("POST", "/a.b/(c)+{d}", "/a.b/(c)+{d}", null, ReplayClass.NonReplayable, null));
            rows.Add(new Operation("GET", "/events", "/events", "streamEvents", ReplayClass.Idempotent, null, streaming: true, resumable: true));
            rows.Add(new Operation("POST", "/runs", "/runs", "runStream", ReplayClass.NonReplayable, null, streaming: true, resumable: true));
            rows.Add(new Operation("GET", "/metrics", "/metrics", "streamMetrics", ReplayClass.Idempotent, null, streaming: true));
            return rows.ToArray();
        }
    }

    /// <content>The contract's default policy values.</content>
    public sealed partial class RetryPolicy
    {
        /// <summary>Initializes a new instance of the <see cref="RetryPolicy"/> class; every value defaults to the contract's.</summary>
        /// <param name="maxRetries">Retries allowed after the first attempt.</param>
        /// <param name="initialBackoffMs">The backoff before the first retry, in milliseconds.</param>
        /// <param name="maxBackoffMs">The largest backoff, in milliseconds.</param>
        /// <param name="multiplier">The growth of the backoff from one retry to the next.</param>
        /// <param name="jitter">How the backoff is randomized.</param>
        /// <param name="retryableStatuses">Statuses retried when the request is replayable.</param>
        /// <param name="rejectedStatuses">Statuses retried for every class but no_retry.</param>
        /// <param name="retryAfterCapMs">The longest server-requested delay to honour.</param>
        /// <param name="deadlineMs">The deadline, or <c>null</c> for none.</param>
        /// <param name="retryOnlyWithServerDelay">Statuses retried only with a server delay.</param>
        /// <param name="keyInFlightStatuses">Statuses retried when the request carries its key.</param>
        /// <param name="keyReusedStatuses">Statuses never retried when the request carries its key.</param>
        /// <param name="serverDirectiveHeaders">The directive headers.</param>
        /// <param name="retryAfterOverCap">What a server delay above the cap does.</param>
        /// <param name="unknownOperationClass">The class of unknown requests.</param>
        /// <param name="budgetCapacity">The budget's capacity.</param>
        /// <param name="budgetRetryCost">The cost of a retry.</param>
        /// <param name="budgetTimeoutCost">The cost of a retry after a timeout.</param>
        /// <param name="budgetSuccessRefund">The refund of a success without retries.</param>
        /// <param name="throttlingStatuses">Contract v3: the throttling statuses.</param>
        /// <param name="throttlingInitialBackoffMs">Contract v3: the throttling base, or <c>null</c>.</param>
        /// <param name="budgetThrottlingCost">Contract v3: the cost of a throttled retry, or <c>null</c>.</param>
        /// <param name="stopProblemTypes">Contract v3: problem types that stop.</param>
        /// <param name="retryProblemTypes">Contract v3: problem types that retry.</param>
        /// <param name="idempotencyKeyFormat">Contract v3: the minted key's format.</param>
        public RetryPolicy(
            int maxRetries = 3,
            long initialBackoffMs = 500,
            long maxBackoffMs = 30000,
            double multiplier = 2.0,
            Jitter jitter = Jitter.Full,
            IEnumerable<int> retryableStatuses = null,
            IEnumerable<int> rejectedStatuses = null,
            long retryAfterCapMs = 60000,
            long? deadlineMs = null,
            IEnumerable<int> retryOnlyWithServerDelay = null,
            IEnumerable<int> keyInFlightStatuses = null,
            IEnumerable<int> keyReusedStatuses = null,
            IEnumerable<string> serverDirectiveHeaders = null,
            OverCapMode retryAfterOverCap = OverCapMode.Refuse,
            UnknownOperationClass unknownOperationClass = UnknownOperationClass.MethodDefault,
            long budgetCapacity = 500,
            long budgetRetryCost = 5,
            long budgetTimeoutCost = 10,
            long budgetSuccessRefund = 1,
            IEnumerable<int> throttlingStatuses = null,
            long? throttlingInitialBackoffMs = null,
            long? budgetThrottlingCost = null,
            IEnumerable<string> stopProblemTypes = null,
            IEnumerable<string> retryProblemTypes = null,
            IdempotencyKeyFormat idempotencyKeyFormat = IdempotencyKeyFormat.Uuid)
            : this(
                maxRetries,
                initialBackoffMs,
                maxBackoffMs,
                multiplier,
                jitter,
                Statuses(retryableStatuses, 408, 425, 429, 500, 502, 503, 504),
                Statuses(rejectedStatuses, 429),
                retryAfterCapMs,
                deadlineMs,
                Statuses(retryOnlyWithServerDelay),
                Statuses(keyInFlightStatuses, 409),
                Statuses(keyReusedStatuses, 422),
                Headers(serverDirectiveHeaders, "x-should-retry"),
                retryAfterOverCap,
                unknownOperationClass,
                budgetCapacity,
                budgetRetryCost,
                budgetTimeoutCost,
                budgetSuccessRefund,
                Statuses(throttlingStatuses, 429),
                throttlingInitialBackoffMs,
                budgetThrottlingCost,
                ProblemTypes(stopProblemTypes, "https://iana.org/assignments/http-problem-types#quota-exceeded", "https://iana.org/assignments/http-problem-types#abnormal-usage-detected"),
                ProblemTypes(retryProblemTypes),
                idempotencyKeyFormat)
        {
        }

        /// <summary>Gets the contract's default policy.</summary>
        public static RetryPolicy Default { get; } = new RetryPolicy();
    }
}
