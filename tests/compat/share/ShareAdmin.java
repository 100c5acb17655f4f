// The share-group admin calls of kafka-clients 4.4.0's Admin against one Empty share group:
// listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets, describeShareGroups,
// deleteShareGroups. One JSON line per step: the offsets seen ("topic-partition": [start,
// lag]) or the exception class a call ended with ("ok" when none).
// Usage: ShareAdmin <bootstrap> <group> <topic> <new start offset>

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

public class ShareAdmin {
    static void emit(String step, String value) {
        System.out.println("{\"step\": \"" + step + "\", \"result\": " + value + "}");
        System.out.flush();
    }

    static String outcome(KafkaFuture<?> future) throws InterruptedException {
        try {
            future.get(30, TimeUnit.SECONDS);
            return "\"ok\"";
        } catch (ExecutionException e) {
            return "\"" + e.getCause().getClass().getSimpleName() + "\"";
        } catch (java.util.concurrent.TimeoutException e) {
            return "\"timeout\"";
        }
    }

    static String offsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> got = admin
            .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
            .partitionsToOffsetInfo(group)
            .get(30, TimeUnit.SECONDS);
        Map<String, String> sorted = new TreeMap<>();
        got.forEach((tp, info) -> sorted.put(tp.toString(),
            "[" + info.startOffset() + ", " + info.lag().orElse(-1L) + "]"));
        StringBuilder out = new StringBuilder("{");
        sorted.forEach((k, v) -> out.append(out.length() > 1 ? ", " : "")
            .append("\"").append(k).append("\": ").append(v));
        return out.append("}").toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], topic = args[2];
        long start = Long.parseLong(args[3]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(props)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            emit("list", offsets(admin, group));
            emit("alter", outcome(admin.alterShareGroupOffsets(group, Map.of(tp, start)).all()));
            emit("alter unknown topic", outcome(admin.alterShareGroupOffsets(
                group, Map.of(new TopicPartition(topic + "-none", 0), 0L)).all()));
            emit("list after alter", offsets(admin, group));
            emit("delete", outcome(admin.deleteShareGroupOffsets(group, Set.of(topic)).all()));
            emit("list after delete", offsets(admin, group));
            emit("describe", "\"" + admin.describeShareGroups(List.of(group)).all()
                .get(30, TimeUnit.SECONDS).get(group).groupState() + "\"");
            emit("delete group", outcome(admin.deleteShareGroups(List.of(group)).all()));
            emit("describe deleted", outcome(admin.describeShareGroups(List.of(group)).all()));
            emit("delete offsets of deleted", outcome(
                admin.deleteShareGroupOffsets(group, Set.of(topic)).all()));
        }
    }
}
