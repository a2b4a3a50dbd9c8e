// Java callers of the runtime: compiled with javac against the compiled runtime and run with `java`
// (see README.md). It proves the public API reads naturally from Java: @JvmOverloads constructors,
// @JvmStatic functions, @JvmField constants, unmodifiable collections.

package retrygen.javacallers;

import java.util.List;
import kotlin.Pair;
import retrygen.generated.BudgetAcquisition;
import retrygen.generated.BudgetKind;
import retrygen.generated.Classification;
import retrygen.generated.Classifier;
import retrygen.generated.Decision;
import retrygen.generated.DecisionInput;
import retrygen.generated.DecisionReason;
import retrygen.generated.EventStreamScanner;
import retrygen.generated.IdempotencyKeyFormat;
import retrygen.generated.Jitter;
import retrygen.generated.Operation;
import retrygen.generated.OperationTable;
import retrygen.generated.Outcome;
import retrygen.generated.ReplayClass;
import retrygen.generated.RetryBudgetCell;
import retrygen.generated.RetryEvent;
import retrygen.generated.RetryInputException;
import retrygen.generated.RetryPolicy;
import retrygen.generated.RetryRuntime;

public final class JavaCallers {
    private static int failures = 0;

    private static void expect(String what, Object actual, Object expected) {
        if (!expected.equals(actual)) {
            System.err.println("FAIL " + what + ": expected <" + expected + ">, got <" + actual + ">");
            failures++;
        }
    }

    private static void expectUnmodifiable(String what, Runnable mutation) {
        try {
            mutation.run();
            System.err.println("FAIL " + what + ": mutated");
            failures++;
        } catch (UnsupportedOperationException expected) {
            // Unmodifiable, as it should be.
        }
    }

    public static void main(String[] args) {
        // @JvmOverloads: every prefix of the parameters, the contract's defaults for the rest.
        RetryPolicy contract = new RetryPolicy();
        RetryPolicy five = new RetryPolicy(5);
        RetryPolicy equal = new RetryPolicy(5, 100L, 1000L, 2.0, Jitter.EQUAL);
        expect("default max retries", contract.getMaxRetries(), 3);
        expect("overload", five.getMaxRetries(), 5);
        expect("overload keeps defaults", five.getRetryAfterCapMs(), 60000L);
        expect("jitter", equal.getJitter(), Jitter.EQUAL);
        expect("contract statuses", RetryPolicy.CONTRACT_RETRYABLE_STATUSES.size(), 7);

        Operation get = new Operation("GET", "/items/{id}", "/items/{id}", "getItem", ReplayClass.IDEMPOTENT, null);
        Operation post = new Operation("POST", "/items", "/items", "createItem", ReplayClass.NON_REPLAYABLE, null);
        OperationTable table = new OperationTable("/v1", List.of(get, post));
        Classification c = table.classify("get", "/v1/items/7?x=1");
        expect("classify", c.getOperation(), get);
        expect("class", c.getReplayClass(), ReplayClass.IDEMPOTENT);
        expect("by id", table.operationById("createItem"), post);
        expect("non-replayable", table.isNonReplayable("POST", "/items/"), true);
        expect("pattern", post.getPattern().getPattern(), "^/(?:i|%69)(?:t|%74)(?:e|%65)(?:m|%6[Dd])(?:s|%73)/?$");
        expect("safe list entry", table.findSafeListEntry("POST", "/items").getOperation(), post);
        Classifier proxy = table.classifier("https://gw.example/proxy/v1");
        expect("classifier", proxy.classify("POST", "/proxy/v1/items").getOperation(), post);
        expect("classifier by name", table.classifier(null, "no_retry").classify("GET", "/x").getReplayClass(), ReplayClass.NO_RETRY);
        try {
            table.classify("GET", "/\ud800");
            failures++;
            System.err.println("FAIL lone surrogate: no exception");
        } catch (RetryInputException e) {
            expect("invalid input key", e.getKey(), "input.path");
        }
        RetryBudgetCell cell = new RetryBudgetCell(contract);
        expect("budget cell", cell.tryAcquire(BudgetKind.RETRY), new BudgetAcquisition(true, 495L));
        expect("budget decide", cell.decide(new DecisionInput(ReplayClass.IDEMPOTENT, false, Outcome.Connect.INSTANCE, 0L, 0L, 0L, 0L, 0.5)).getBudgetTokens(), 490L);
        expect("key", RetryRuntime.hasIdempotencyKey(new Operation("POST", "/k", "/k", null, ReplayClass.KEYED, "Idempotency-Key"), List.of(new Pair<>("idempotency-key", "v"))), true);
        expect("method default", RetryRuntime.methodDefaultClass("delete"), ReplayClass.IDEMPOTENT);

        DecisionInput input = new DecisionInput(ReplayClass.IDEMPOTENT, false, new Outcome.Status(503), 0L, 0L, 0L, 784111777000L, 0.5);
        Decision d = RetryRuntime.decide(contract, input);
        expect("decide", d, new Decision(true, 250L, DecisionReason.RETRYABLE_STATUS));
        expect("event", RetryEvent.of(c, "get", 0L, d).getPathTemplate(), "/items/{id}");
        expect("policy from config", RetryPolicy.fromConfig(3, 500L, 30000L, 2.0, "full", RetryPolicy.CONTRACT_RETRYABLE_STATUSES,
            RetryPolicy.CONTRACT_REJECTED_STATUSES, 60000L, null, RetryPolicy.NO_STATUSES, RetryPolicy.CONTRACT_KEY_IN_FLIGHT_STATUSES,
            RetryPolicy.CONTRACT_KEY_REUSED_STATUSES, RetryPolicy.CONTRACT_SERVER_DIRECTIVE_HEADERS, "refuse", "method_default",
            500L, 5L, 10L, 1L), contract);
        Decision connect = RetryRuntime.decide(five, new DecisionInput(ReplayClass.NON_REPLAYABLE, false, Outcome.Connect.INSTANCE, 0L, 0L, 0L, 0L, 0.5));
        expect("connect", connect.getReason().getWireName(), "connect_failure");
        expect("server delay", RetryRuntime.serverDelayMs("7", null, 0L), 7000L);
        expect("backoff", RetryRuntime.backoffMs(contract, 1L, 0L, 0.5), 500L);
        expect("beyond any cap", RetryRuntime.BEYOND_ANY_CAP_MS, Long.MAX_VALUE);

        // Contract v3 from Java: the builder, the longer DecisionInput overload, the pure functions.
        RetryPolicy throttling = RetryPolicy.builder().jitter(Jitter.NONE).throttlingInitialBackoffMs(1000L).budgetThrottlingCost(2L).build();
        Decision throttled = RetryRuntime.decide(throttling, new DecisionInput(ReplayClass.IDEMPOTENT, false, new Outcome.Status(429), 0L, 0L, 0L, 0L,
            0.5, 500L, false, false, false, false, null, null));
        expect("throttled", throttled, new Decision(true, 1000L, DecisionReason.REJECTED_STATUS, 498L, true, null));
        Decision resumed = RetryRuntime.decide(contract, new DecisionInput(ReplayClass.NON_REPLAYABLE, false, Outcome.Dropped.INSTANCE, 0L, 0L, 0L,
            0L, 0.5, null, false, false, true, true, "300", null));
        expect("resumed", resumed.getDelayMs(), 300L);
        expect("precondition", RetryRuntime.hasPrecondition(List.of(new Pair<>("If-Match", "\"v1\""))), true);
        expect("problem type", RetryRuntime.problemTypeOf("application/problem+json", "{\"type\":\"t\"}".getBytes(), true), "t");
        expect("key format", RetryRuntime.idempotencyKeyValue(IdempotencyKeyFormat.parse("sf-string"), "u"), "\"u\"");
        EventStreamScanner scanner = new EventStreamScanner();
        scanner.feed("id: 7\n\nda".getBytes());
        expect("scanner", scanner.getCompleteBytes() + " " + scanner.getLastEventId() + " " + scanner.getRetry(), "7 7 null");
        Operation logs = new Operation("GET", "/logs", "/logs", "logs", ReplayClass.IDEMPOTENT, null, true, true);
        expect("stream attributes", new OperationTable("", List.of(logs)).classify("GET", "/logs").getResumable(), true);

        expectUnmodifiable("operations", () -> table.getOperations().add(get));
        expectUnmodifiable("non-replayable list", () -> table.getNonReplayableOperations().clear());
        expectUnmodifiable("idempotent methods", () -> RetryRuntime.IDEMPOTENT_METHODS.add("POST"));
        expectUnmodifiable("policy statuses", () -> contract.getRetryableStatuses().add(404));

        if (failures > 0) {
            System.exit(1);
        }
        System.out.println("java callers of the runtime: ok");
    }
}
