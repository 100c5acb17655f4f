import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * An idempotent producer (acks=all, 5 in flight) sending COUNT keyed records with one codec.
 *
 * <p>Usage: Produce BOOTSTRAP TOPIC COUNT CODEC. Record i has key "key-i" and a compressible
 * value (so every codec shrinks the batch). Prints one line per acknowledged record:
 * {"i", "partition", "offset", "timestamp"}, in send order.
 */
public final class Produce {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        Properties props = Clients.base(args[0]);
        props.put("enable.idempotence", "true");
        props.put("acks", "all");
        props.put("max.in.flight.requests.per.connection", "5");
        props.put("compression.type", args[3]);
        props.put("linger.ms", "5");
        // Small batches: every partition gets several, so sequences must run on across them.
        props.put("batch.size", "4096");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, key(i), value(i))));
            }
            producer.flush();
            for (int i = 0; i < count; i++) {
                RecordMetadata meta = sent.get(i).get();
                Json.print(
                        Json.obj(
                                "i", i,
                                "partition", meta.partition(),
                                "offset", meta.offset(),
                                "timestamp", meta.timestamp()));
            }
        }
    }

    static byte[] key(int i) {
        return ("key-" + i).getBytes(StandardCharsets.UTF_8);
    }

    static byte[] value(int i) {
        return ("java record " + i + ": the quick brown fox jumps over the lazy dog")
                .getBytes(StandardCharsets.UTF_8);
    }
}
