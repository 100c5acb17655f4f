import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A consumer in a classic group: subscribe, read COUNT records from the earliest offsets,
 * commitSync, report what the group committed, close (LeaveGroup).
 *
 * <p>Usage: ConsumeGroup BOOTSTRAP TOPIC GROUP COUNT [GROUP_PROTOCOL]. GROUP_PROTOCOL is
 * kafka-clients' group.protocol: classic (the default) or consumer (KIP-848). Prints every
 * record, then {"assignment": [...]}, then {"committed": {partition: offset}}.
 */
public final class ConsumeGroup {
    public static void main(String[] args) {
        String topic = args[1];
        int count = Integer.parseInt(args[3]);
        Properties props = Clients.base(args[0]);
        props.put("group.id", args[2]);
        if (args.length > 4) props.put("group.protocol", args[4]);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 45_000;
            while (seen < count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read " + seen + " of " + count + " records");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    seen++;
                    Json.print(
                            Json.obj(
                                    "partition", r.partition(),
                                    "offset", r.offset(),
                                    "key", r.key(),
                                    "value", r.value()));
                }
            }
            consumer.commitSync();
            Set<TopicPartition> assignment = consumer.assignment();
            Json.print(Json.obj("assignment", assignment.stream().map(TopicPartition::partition).sorted().toList()));
            Map<Integer, Long> committed = new HashMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : consumer.committed(assignment).entrySet()) {
                committed.put(e.getKey().partition(), e.getValue() == null ? null : e.getValue().offset());
            }
            Json.print(Json.obj("committed", committed));
        }
    }
}
