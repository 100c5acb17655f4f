import java.util.Properties;
import java.util.concurrent.ExecutionException;

/** Settings every compat program shares, and how a failure is reported. */
final class Clients {
    private Clients() {}

    static Properties base(String bootstrap) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "minikafka-compat-java");
        // Fail well inside pytest's timeout instead of retrying for Kafka's default minute.
        props.put("request.timeout.ms", "15000");
        props.put("default.api.timeout.ms", "30000");
        return props;
    }

    /** The exception a Kafka future failed with, as {"error": class, "message": text}. */
    static java.util.Map<String, Object> error(Throwable thrown) {
        Throwable cause = thrown;
        while (cause instanceof ExecutionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return Json.obj("error", cause.getClass().getSimpleName(), "message", cause.getMessage());
    }
}
