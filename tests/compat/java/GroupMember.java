import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A long-running group member: reads until its stdin closes, committing what it read after
 * each poll and on revocation (so a partition's next owner starts where it stopped), then
 * closes (leaves the group).
 *
 * <p>Usage: GroupMember BOOTSTRAP TOPIC GROUP GROUP_PROTOCOL. Prints {"assigned": [...]} and
 * {"revoked": [...]} on each rebalance callback and {"partition": p, "offset": o} per record.
 */
public final class GroupMember {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        Properties props = Clients.base(args[0]);
        props.put("group.id", args[2]);
        props.put("group.protocol", args[3]);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            Map<TopicPartition, OffsetAndMetadata> read = new HashMap<>();
            Thread stdin = new Thread(() -> {
                try (BufferedReader in = new BufferedReader(
                        new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                    while (in.readLine() != null) {
                        // Any line is ignored; the end of input stops the member.
                    }
                } catch (IOException e) {
                    // Treated as the end of input.
                }
                consumer.wakeup();
            });
            stdin.setDaemon(true);
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    Map<TopicPartition, OffsetAndMetadata> mine = new HashMap<>();
                    for (TopicPartition tp : partitions) {
                        if (read.containsKey(tp)) mine.put(tp, read.remove(tp));
                    }
                    if (!mine.isEmpty()) commit(consumer, mine);
                    Json.print(Json.obj("revoked", partitions.stream().map(TopicPartition::partition).sorted().toList()));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    Json.print(Json.obj("assigned", partitions.stream().map(TopicPartition::partition).sorted().toList()));
                }
            });
            stdin.start();
            try {
                while (true) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        Json.print(Json.obj("partition", r.partition(), "offset", r.offset()));
                        read.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    if (!records.isEmpty()) {
                        commit(consumer, read);
                    }
                }
            } catch (WakeupException e) {
                // stdin closed: close() below revokes (and so commits) and leaves.
            }
        }
    }

    /**
     * commitSync, retried when it races the heartbeat that moves the member to its next epoch
     * (STALE_MEMBER_EPOCH, surfaced as CommitFailedException: the background thread gets the
     * new epoch meanwhile, as Kafka's documentation of the error asks) or, in a classic group,
     * a rebalance that has just started (RebalanceInProgressException).
     */
    private static void commit(
            KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, OffsetAndMetadata> offsets) {
        for (int attempt = 1; ; attempt++) {
            try {
                consumer.commitSync(new HashMap<>(offsets));
                return;
            } catch (CommitFailedException | RebalanceInProgressException e) {
                if (attempt == 10) throw e;
                Json.print(Json.obj("commit_retry", e.getMessage()));
                try {
                    Thread.sleep(100);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }
}
