// A Java caller of the OkHttp adapter (RetryInterceptor.kt): compiled with javac against the
// compiled runtime, adapter and OkHttp, and run with `java` (see README.md). It proves the
// installation reads naturally from Java: @JvmOverloads constructors, listeners as lambdas.

package retrygen.javacallers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import okhttp3.OkHttpClient;
import retrygen.generated.Operation;
import retrygen.generated.OperationTable;
import retrygen.generated.ReplayClass;
import retrygen.generated.RetryEvent;
import retrygen.generated.RetryFinish;
import retrygen.generated.RetryInterceptor;
import retrygen.generated.RetryPolicy;

public final class InterceptorFromJava {
    private static int failures = 0;

    private static void expect(String what, Object actual, Object expected) {
        if (!expected.equals(actual)) {
            System.err.println("FAIL " + what + ": expected <" + expected + ">, got <" + actual + ">");
            failures++;
        }
    }

    public static void main(String[] args) {
        Operation get = new Operation("GET", "/items/{id}", "/items/{id}", "getItem", ReplayClass.IDEMPOTENT, null);
        OperationTable table = new OperationTable("/v1", List.of(get));
        RetryPolicy policy = new RetryPolicy(2);

        // The two required arguments, then any prefix of the options.
        RetryInterceptor plain = new RetryInterceptor(table, policy);
        List<RetryEvent> events = new ArrayList<>();
        List<RetryFinish> finishes = new ArrayList<>();
        RetryInterceptor full =
            new RetryInterceptor(table, policy, "https://api.example/v1", events::add, finishes::add, false, Duration.ofSeconds(5));
        expect("defaults: minting on", plain.getMintIdempotencyKeys(), true);
        expect("defaults: no attempt timeout", plain.getAttemptTimeout() == null, true);
        expect("options", full.getMintIdempotencyKeys(), false);
        expect("budget", full.getBudgetTokens(), 500L);

        OkHttpClient client = full.install(new OkHttpClient.Builder()).build();
        expect("installed: OkHttp replays off", client.retryOnConnectionFailure(), false);
        expect("installed: an application interceptor", client.interceptors().contains(full), true);
        expect("finish reason constant", RetryFinish.BODY_NOT_REPLAYABLE, "body_not_replayable");
        expect("foreign origin constant", RetryFinish.FOREIGN_ORIGIN, "foreign_origin");
        // The eight-argument constructor of before redirects was added still compiles (@JvmOverloads).
        RetryFinish finish = new RetryFinish(1, "status_not_retryable", "status", 200, false, "GET", null, null);
        expect("finish without redirects", finish.getRedirects(), 0);
        expect("installed: its network interceptor", client.networkInterceptors().size(), 1);
        client.dispatcher().executorService().shutdown();
        if (failures > 0) {
            System.exit(1);
        }
        System.out.println("java callers of the OkHttp adapter: ok");
    }
}
