import java.io.FileReader;
import java.io.IOException;
import java.io.Reader;
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
        // Security settings (security.protocol, sasl.*, ssl.*) for the security tests.
        String extra = System.getenv("MINIKAFKA_CLIENT_PROPERTIES");
        if (extra != null) {
            try (Reader reader = new FileReader(extra)) {
                props.load(reader);
            } catch (IOException e) {
                throw new IllegalStateException("cannot read " + extra, e);
            }
        }
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
