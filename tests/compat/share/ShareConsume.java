// Three KafkaShareConsumers (kafka-clients 4.4.0) in one share group, one thread each, on one
// partition of RECORDS records "v0".."v<N-1>": value i % 5 == 0 is released at every
// delivery (archived at the delivery-count limit), i % 5 == 1 released at its first delivery
// and accepted at the next, every other one accepted. One JSON line per delivery, then one
// {"done": ...} line when every record was accepted or archived (or the time ran out).
// Usage: ShareConsume <bootstrap> <topic> <group> <records> <delivery limit>

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareConsume {
    static final Set<Long> accepted = ConcurrentHashMap.newKeySet();
    static final Set<Long> archived = ConcurrentHashMap.newKeySet();

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int records = Integer.parseInt(args[3]);
        int limit = Integer.parseInt(args[4]);
        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            // The records are produced first: start from the earliest offset.
            admin.incrementalAlterConfigs(Map.of(
                new ConfigResource(ConfigResource.Type.GROUP, group),
                List.of(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                    AlterConfigOp.OpType.SET)))).all().get();
        }
        long deadline = System.currentTimeMillis() + 60_000;
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < 3; c++) {
            final int id = c;
            Thread t = new Thread(() -> run(id, bootstrap, topic, group, records, limit, deadline));
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
        emit("{\"done\": " + (accepted.size() + archived.size() == records) + "}");
    }

    static void run(int id, String bootstrap, String topic, String group, int records, int limit,
                    long deadline) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", "share-" + id);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", "explicit");
        p.put("max.poll.records", "10");
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            while (accepted.size() + archived.size() < records
                    && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> got = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : got) {
                    int i = Integer.parseInt(r.value().substring(1));
                    short delivery = r.deliveryCount().orElse((short) -1);
                    AcknowledgeType ack = i % 5 == 0 || (i % 5 == 1 && delivery == 1)
                        ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
                    consumer.acknowledge(r, ack);
                    emit("{\"consumer\": " + id + ", \"offset\": " + r.offset() + ", \"value\": " + i
                        + ", \"delivery\": " + delivery + ", \"ack\": \"" + ack + "\"}");
                    if (ack == AcknowledgeType.ACCEPT) accepted.add(r.offset());
                    else if (delivery >= limit) archived.add(r.offset());
                }
                if (got.count() > 0) consumer.commitSync();
            }
        }
    }
}
