import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A consumer without a group, used as Spark's Kafka connector uses one: assign, look up the
 * offsets, seek, poll a range.
 *
 * <p>Usage: ConsumeAssign BOOTSTRAP TOPIC PARTITIONS ISOLATION TIMESTAMP START_OFFSETS where
 * START_OFFSETS is "p:offset,...". Prints, one line each: beginningOffsets, endOffsets, the
 * positions after seekToBeginning and after seekToEnd, offsetsForTimes(TIMESTAMP); then seeks
 * each partition to its start offset, polls until every partition's position reaches its end
 * offset and prints every record, then the final positions.
 */
public final class ConsumeAssign {
    public static void main(String[] args) {
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        Properties props = Clients.base(args[0]);
        props.put("isolation.level", args[3]);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "none");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        long timestamp = Long.parseLong(args[4]);
        Map<TopicPartition, Long> start = new HashMap<>();
        for (String spec : args[5].split(",")) {
            String[] parts = spec.split(":");
            start.put(new TopicPartition(topic, Integer.parseInt(parts[0])), Long.parseLong(parts[1]));
        }
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) all.add(new TopicPartition(topic, p));

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(all);
            Map<TopicPartition, Long> end = consumer.endOffsets(all);
            Json.print(Json.obj("beginningOffsets", byPartition(consumer.beginningOffsets(all))));
            Json.print(Json.obj("endOffsets", byPartition(end)));
            consumer.seekToBeginning(all);
            Json.print(Json.obj("seekToBeginning", positions(consumer, all)));
            consumer.seekToEnd(all);
            Json.print(Json.obj("seekToEnd", positions(consumer, all)));
            Map<TopicPartition, Long> query = new HashMap<>();
            for (TopicPartition tp : all) query.put(tp, timestamp);
            Map<Integer, Object> byTime = new HashMap<>();
            for (Map.Entry<TopicPartition, OffsetAndTimestamp> e :
                    consumer.offsetsForTimes(query).entrySet()) {
                OffsetAndTimestamp found = e.getValue();
                byTime.put(
                        e.getKey().partition(),
                        found == null
                                ? null
                                : Json.obj("offset", found.offset(), "timestamp", found.timestamp()));
            }
            Json.print(Json.obj("offsetsForTimes", byTime));

            for (Map.Entry<TopicPartition, Long> e : start.entrySet()) {
                consumer.seek(e.getKey(), e.getValue());
            }
            consumer.pause(notIn(all, start));
            long deadline = System.currentTimeMillis() + 30_000;
            while (!reached(consumer, start, end)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("positions did not reach the end offsets");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    Json.print(
                            Json.obj(
                                    "partition", r.partition(),
                                    "offset", r.offset(),
                                    "key", r.key(),
                                    "value", r.value(),
                                    "timestamp", r.timestamp()));
                }
            }
            Json.print(Json.obj("positions", positions(consumer, new ArrayList<>(start.keySet()))));
        }
    }

    private static List<TopicPartition> notIn(List<TopicPartition> all, Map<TopicPartition, Long> start) {
        List<TopicPartition> rest = new ArrayList<>(all);
        rest.removeAll(start.keySet());
        return rest;
    }

    private static boolean reached(
            KafkaConsumer<byte[], byte[]> consumer,
            Map<TopicPartition, Long> start,
            Map<TopicPartition, Long> end) {
        for (TopicPartition tp : start.keySet()) {
            if (consumer.position(tp) < end.get(tp)) return false;
        }
        return true;
    }

    private static Map<Integer, Long> positions(
            KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> partitions) {
        Map<Integer, Long> result = new HashMap<>();
        for (TopicPartition tp : partitions) result.put(tp.partition(), consumer.position(tp));
        return result;
    }

    private static Map<Integer, Long> byPartition(Map<TopicPartition, Long> offsets) {
        Map<Integer, Long> result = new HashMap<>();
        offsets.forEach((tp, offset) -> result.put(tp.partition(), offset));
        return result;
    }
}
