import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A transactional producer: three transactions on partition 0 of TOPIC, the first also
 * committing offset 5 of INPUT-0 for GROUP (sendOffsetsToTransaction), the second aborted.
 *
 * <p>Usage: TxnProduce BOOTSTRAP TOPIC INPUT GROUP TRANSACTIONAL_ID. kafka-clients 4.x uses
 * transactions v2 when the broker finalizes transaction.version 2 (Produce v12, EndTxn v5
 * with an epoch bump per transaction, TxnOffsetCommit v5); 3.x uses transactions v1. Prints
 * {"txn", "value", "partition", "offset"} per acknowledged record and {"txn", "ended"} per
 * transaction.
 */
public final class TxnProduce {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        TopicPartition input = new TopicPartition(args[2], 0);
        ConsumerGroupMetadata group = new ConsumerGroupMetadata(args[3]);
        Properties props = Clients.base(args[0]);
        props.put("transactional.id", args[4]);
        props.put("transaction.timeout.ms", "30000");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            String[][] transactions = {{"c1-0", "c1-1", "c1-2"}, {"a2-0", "a2-1"}, {"c3-0"}};
            for (int t = 0; t < transactions.length; t++) {
                producer.beginTransaction();
                for (String value : transactions[t]) {
                    RecordMetadata meta =
                            producer.send(
                                            new ProducerRecord<>(
                                                    topic,
                                                    0,
                                                    null,
                                                    value.getBytes(StandardCharsets.UTF_8)))
                                    .get();
                    Json.print(
                            Json.obj(
                                    "txn", t,
                                    "value", value,
                                    "partition", meta.partition(),
                                    "offset", meta.offset()));
                }
                if (t == 0) {
                    producer.sendOffsetsToTransaction(
                            Map.of(input, new OffsetAndMetadata(5)), group);
                }
                if (t == 1) {
                    producer.abortTransaction();
                    Json.print(Json.obj("txn", t, "ended", "abort"));
                } else {
                    producer.commitTransaction();
                    Json.print(Json.obj("txn", t, "ended", "commit"));
                }
            }
        }
    }
}
