// A Java caller of a generated Kotlin module's tables object, compiled with `javac -Werror
// -Xlint:all` against the compiled module and run by `cargo xtask conformance` (Kotlin lint).
// xtask/src/toolchains/kotlin.rs replaces the package retrygen.generated and the object name
// RetryPolicies with the module's. Works for any spec, an empty one included.

package retrygen.javacallers;

import java.util.List;
import java.util.Set;
import java.util.ArrayList;
import kotlin.Pair;
import retrygen.generated.BudgetKind;
import retrygen.generated.Classification;
import retrygen.generated.Classifier;
import retrygen.generated.Decision;
import retrygen.generated.DecisionInput;
import retrygen.generated.Operation;
import retrygen.generated.OperationTable;
import retrygen.generated.Outcome;
import retrygen.generated.ReplayClass;
import retrygen.generated.RetryPolicies;
import retrygen.generated.RetryBudgetCell;
import retrygen.generated.RetryEvent;
import retrygen.generated.RetryInputException;
import retrygen.generated.RetryPolicy;
import retrygen.generated.SafeListEntry;

public final class TablesFromJava {
    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) {
        String basePath = RetryPolicies.BASE_PATH;
        String source = RetryPolicies.SOURCE_NAME;
        check(source != null && basePath != null, "constants");
        List<Operation> operations = RetryPolicies.OPERATIONS;
        OperationTable table = RetryPolicies.TABLE;
        check(table.getOperations() == operations, "one table");
        Set<String> methods = RetryPolicies.IDEMPOTENT_METHODS;
        check(methods.contains("GET"), "idempotent methods");
        for (Operation operation : operations) {
            String id = operation.getOperationId();
            check(id == null || RetryPolicies.operationById(id) != null, "operation by id");
            check(operation.getPattern().getPattern().startsWith("^/"), "pattern");
        }
        List<SafeListEntry> listed = RetryPolicies.nonReplayableOperations();
        for (SafeListEntry entry : listed) {
            check(entry.getMethod() != null && entry.getPattern() != null, "list entry");
            check(RetryPolicies.findSafeListEntry(entry.getMethod(), "/") != entry || entry.getPattern().matches("/"), "safe list");
        }
        Classification c = RetryPolicies.classify("get", basePath + "/?q");
        check(c.getReplayClass() != null, "classify");
        Classifier proxy = RetryPolicies.classifier("https://gw.example/proxy/v1/");
        check(proxy.getBasePath().equals("/proxy/v1"), "classifier base path");
        check(RetryPolicies.classifier(null, "no_retry").classify("GET", "/no/such/op/x/y/z").getReplayClass() != null, "classifier");
        try {
            RetryPolicies.classify("GET", "/\ud800");
            throw new AssertionError("a lone surrogate is classified");
        } catch (RetryInputException expected) {
            check(expected.getKey().equals("input.path"), "input.path");
        }
        List<Pair<String, String>> headers = new ArrayList<>();
        headers.add(new Pair<>("Idempotency-Key", "k1"));
        for (Operation operation : operations) {
            check(RetryPolicies.hasIdempotencyKey(operation, headers) == (operation.getIdempotencyHeader() != null
                && operation.getIdempotencyHeader().equalsIgnoreCase("idempotency-key")), "has key");
        }
        RetryBudgetCell cell = new RetryBudgetCell(RetryPolicies.DEFAULT_POLICY);
        check(cell.tryAcquire(BudgetKind.RETRY).getAllowed() || cell.getTokens() == 0L, "budget cell");

        RetryPolicy policy = RetryPolicies.DEFAULT_POLICY;
        RetryPolicy five = new RetryPolicy(5);
        check(five.getMaxRetries() == 5, "@JvmOverloads");
        Decision d = RetryPolicies.decide(policy,
            new DecisionInput(ReplayClass.IDEMPOTENT, false, Outcome.Aborted.INSTANCE, 0L, 0L, 0L, 0L, 0.5));
        check(!d.getRetry(), "aborted stops");
        // Behaviour is the conformance vectors' business; this only calls the API as Java would.
        Decision status = RetryPolicies.decide(five,
            new DecisionInput(ReplayClass.IDEMPOTENT, false, new Outcome.Status(503), 0L, 0L, 0L, 0L, 0.5, 500L));
        check(status.getReason() != null, "a reason");
        if (status.getRetry()) {
            RetryEvent event = RetryEvent.of(RetryPolicies.classify("GET", "/"), "get", 0L, status);
            check(event.getAttempt() == 1L, "event attempt");
        }
        check(RetryPolicies.backoffMs(policy, 0L, 0L, 0.0) >= 0L, "backoff");
        Long delay = RetryPolicies.serverDelayMs("7", null, 0L);
        check(delay != null, "server delay");
        check(RetryPolicies.BEYOND_ANY_CAP_MS == Long.MAX_VALUE, "beyond any cap");

        try {
            operations.add(null);
            throw new AssertionError("OPERATIONS is modifiable");
        } catch (UnsupportedOperationException expected) {
            // Unmodifiable.
        }
        try {
            policy.getRetryableStatuses().clear();
            throw new AssertionError("DEFAULT_POLICY's statuses are modifiable");
        } catch (UnsupportedOperationException expected) {
            // Unmodifiable.
        }
        try {
            listed.clear();
            throw new AssertionError("the non-replayable list is modifiable");
        } catch (UnsupportedOperationException expected) {
            // Unmodifiable.
        }
    }
}
