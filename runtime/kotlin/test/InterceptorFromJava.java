// A Java caller of the OkHttp adapter (RetryInterceptor.kt): compiled with javac against the
// compiled runtime, adapter and OkHttp, and run with `java` (see README.md). It proves the
// installation reads naturally from Java: the builder, listeners as lambdas, the static finishOf.

package retrygen.javacallers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import okhttp3.OkHttpClient;
import retrygen.generated.Operation;
import retrygen.generated.OperationTable;
import retrygen.generated.ReplayClass;
import retrygen.generated.RetryEvent;
import retrygen.generated.RetryAttempt;
import retrygen.generated.RetryFinish;
import retrygen.generated.RetryInterceptor;
import retrygen.generated.RetryOverrides;
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

        // The two required arguments, then any of the options, by name.
        RetryInterceptor plain = RetryInterceptor.builder(table, policy).build();
        List<RetryEvent> events = new ArrayList<>();
        List<RetryFinish> finishes = new ArrayList<>();
        RetryInterceptor full =
            RetryInterceptor.builder(table, policy)
                .baseUrl("https://api.example/v1")
                .onRetry(events::add)
                .onFinish(finishes::add)
                .mintIdempotencyKeys(false)
                .attemptTimeout(Duration.ofSeconds(5))
                .attemptHeader("X-Retry-Attempt")
                .readBodyMaxBytes(65536)
                .build();
        expect("defaults: minting on", plain.getMintIdempotencyKeys(), true);
        expect("defaults: no attempt timeout", plain.getAttemptTimeout() == null, true);
        expect("defaults: no attempt header", plain.getAttemptHeader() == null, true);
        expect("defaults: no body read", plain.getReadBodyMaxBytes(), 0L);
        expect("options", full.getMintIdempotencyKeys(), false);
        expect("options: attempt header", full.getAttemptHeader(), "X-Retry-Attempt");
        expect("budget", full.getBudgetTokens(), 500L);
        RetryOverrides overrides = RetryOverrides.builder().maxRetries(0).attemptTimeout(Duration.ZERO).build();
        expect("overrides", overrides.getMaxRetries(), 0);
        expect("overrides by value", overrides, RetryOverrides.builder().maxRetries(0).attemptTimeout(Duration.ZERO).build());
        expect("attempt", RetryAttempt.of(2).getNumber(), 2);
        expect("no finish on a plain exception", RetryInterceptor.finishOf(new java.io.IOException("x")) == null, true);

        OkHttpClient client = full.install(new OkHttpClient.Builder()).build();
        expect("installed: OkHttp replays off", client.retryOnConnectionFailure(), false);
        expect("installed: an application interceptor", client.interceptors().contains(full), true);
        expect("finish reason constant", RetryFinish.BODY_NOT_REPLAYABLE, "body_not_replayable");
        expect("foreign origin constant", RetryFinish.FOREIGN_ORIGIN, "foreign_origin");
        expect("a call factory of the client", full.callFactory(client) != null, true);
        expect("installed: its network interceptor", client.networkInterceptors().size(), 1);
        client.dispatcher().executorService().shutdown();
        if (failures > 0) {
            System.exit(1);
        }
        System.out.println("java callers of the OkHttp adapter: ok");
    }
}
