import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A producer with the acks asked for (idempotent only with acks=all) sending records FROM to
 * FROM+COUNT-1, record i to partition i % PARTITIONS with value "TAG-i" and no key.
 *
 * <p>Usage: ProduceRange BOOTSTRAP TOPIC TAG FROM COUNT ACKS PARTITIONS. Prints one line per
 * acknowledgement as it arrives: {"i", "partition", "offset"}, or {"i", "error", "message"}.
 */
public final class ProduceRange {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        String tag = args[2];
        int from = Integer.parseInt(args[3]);
        int count = Integer.parseInt(args[4]);
        String acks = args[5];
        int partitions = Integer.parseInt(args[6]);
        Properties props = Clients.base(args[0]);
        props.put("acks", acks);
        props.put("enable.idempotence", Boolean.toString(acks.equals("all")));
        props.put("linger.ms", "5");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            for (int i = from; i < from + count; i++) {
                final int index = i;
                byte[] value = (tag + "-" + i).getBytes(StandardCharsets.UTF_8);
                producer.send(
                        new ProducerRecord<>(topic, i % partitions, null, value),
                        (meta, exception) -> {
                            // Callbacks run on the producer's I/O thread, one at a time.
                            if (exception != null) {
                                java.util.Map<String, Object> error = Clients.error(exception);
                                error.put("i", index);
                                Json.print(error);
                            } else {
                                Json.print(
                                        Json.obj(
                                                "i", index,
                                                "partition", meta.partition(),
                                                "offset", meta.offset()));
                            }
                        });
            }
            producer.flush();
        }
    }
}
