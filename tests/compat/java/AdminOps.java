import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

/**
 * AdminClient calls, one per stdin line, each answered by one stdout line: {"op": name,
 * "ok": result} or {"op": name, "error": exception class, "message": text}.
 *
 * <p>Usage: AdminOps BOOTSTRAP &lt; plan. Plan lines (words separated by spaces):
 * <ul>
 *   <li>create-topic NAME PARTITIONS [key=value ...]
 *   <li>describe-topics NAME ...
 *   <li>describe-cluster
 *   <li>list-offsets TOPIC PARTITIONS SPEC ISOLATION, SPEC one of earliest, latest,
 *       max-timestamp or a timestamp in ms; ISOLATION read_uncommitted or read_committed
 *   <li>delete-records TOPIC partition:offset ...
 *   <li>describe-configs TOPIC|BROKER NAME
 * </ul>
 */
public final class AdminOps {
    public static void main(String[] args) throws Exception {
        BufferedReader plan =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Admin admin = Admin.create(Clients.base(args[0]))) {
            String line;
            while ((line = plan.readLine()) != null) {
                if (line.isBlank()) continue;
                String[] words = line.trim().split(" +");
                Map<String, Object> answer;
                try {
                    answer = Json.obj("ok", run(admin, words[0], Arrays.copyOfRange(words, 1, words.length)));
                } catch (Exception e) {
                    answer = Clients.error(e);
                }
                Map<String, Object> out = Json.obj("op", words[0]);
                out.putAll(answer);
                Json.print(out);
            }
        }
    }

    private static Object run(Admin admin, String op, String[] args) throws Exception {
        switch (op) {
            case "create-topic":
                return createTopic(admin, args);
            case "describe-topics":
                return describeTopics(admin, args);
            case "describe-cluster":
                return describeCluster(admin);
            case "list-offsets":
                return listOffsets(admin, args);
            case "delete-records":
                return deleteRecords(admin, args);
            case "describe-configs":
                return describeConfigs(admin, args);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static Object createTopic(Admin admin, String[] args) throws Exception {
        String name = args[0];
        Map<String, String> configs = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            configs.put(kv[0], kv[1]);
        }
        NewTopic topic =
                new NewTopic(name, Integer.parseInt(args[1]), (short) 1).configs(configs);
        CreateTopicsResult result = admin.createTopics(List.of(topic));
        result.all().get();
        Map<String, Object> described = new TreeMap<>();
        for (ConfigEntry entry : result.config(name).get().entries()) {
            described.put(entry.name(), entry.value());
        }
        return Json.obj(
                "topicId", result.topicId(name).get().toString(),
                "numPartitions", result.numPartitions(name).get(),
                "replicationFactor", result.replicationFactor(name).get(),
                "configs", described);
    }

    private static Object describeTopics(Admin admin, String[] names) throws Exception {
        Map<String, TopicDescription> descriptions =
                admin.describeTopics(Arrays.asList(names)).allTopicNames().get();
        Map<String, Object> result = new TreeMap<>();
        for (TopicDescription d : descriptions.values()) {
            List<Object> partitions = new ArrayList<>();
            for (TopicPartitionInfo p : d.partitions()) {
                partitions.add(
                        Json.obj(
                                "partition", p.partition(),
                                "leader", p.leader() == null ? null : p.leader().id(),
                                "replicas", ids(p.replicas()),
                                "isr", ids(p.isr())));
            }
            result.put(
                    d.name(),
                    Json.obj(
                            "topicId", d.topicId().toString(),
                            "internal", d.isInternal(),
                            "partitions", partitions));
        }
        return result;
    }

    private static Object describeCluster(Admin admin) throws Exception {
        DescribeClusterResult cluster = admin.describeCluster();
        List<Object> nodes = new ArrayList<>();
        for (Node node : cluster.nodes().get()) {
            nodes.add(Json.obj("id", node.id(), "host", node.host(), "port", node.port(), "rack", node.rack()));
        }
        return Json.obj(
                "clusterId", cluster.clusterId().get(),
                "controller", cluster.controller().get().id(),
                "nodes", nodes);
    }

    private static Object listOffsets(Admin admin, String[] args) throws Exception {
        String topic = args[0];
        OffsetSpec spec;
        switch (args[2]) {
            case "earliest":
                spec = OffsetSpec.earliest();
                break;
            case "latest":
                spec = OffsetSpec.latest();
                break;
            case "max-timestamp":
                spec = OffsetSpec.maxTimestamp();
                break;
            default:
                spec = OffsetSpec.forTimestamp(Long.parseLong(args[2]));
        }
        IsolationLevel isolation = IsolationLevel.valueOf(args[3].toUpperCase());
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (int p = 0; p < Integer.parseInt(args[1]); p++) request.put(new TopicPartition(topic, p), spec);
        Map<TopicPartition, ListOffsetsResultInfo> answer =
                admin.listOffsets(request, new ListOffsetsOptions(isolation)).all().get();
        Map<Integer, Object> result = new TreeMap<>();
        answer.forEach(
                (tp, info) ->
                        result.put(
                                tp.partition(),
                                Json.obj(
                                        "offset", info.offset(),
                                        "timestamp", info.timestamp(),
                                        "leaderEpoch", info.leaderEpoch().orElse(null))));
        return result;
    }

    private static Object deleteRecords(Admin admin, String[] args) throws Exception {
        Map<TopicPartition, RecordsToDelete> request = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String[] parts = args[i].split(":");
            request.put(
                    new TopicPartition(args[0], Integer.parseInt(parts[0])),
                    RecordsToDelete.beforeOffset(Long.parseLong(parts[1])));
        }
        Map<Integer, Object> result = new TreeMap<>();
        for (var e : admin.deleteRecords(request).lowWatermarks().entrySet()) {
            result.put(e.getKey().partition(), e.getValue().get().lowWatermark());
        }
        return result;
    }

    private static Object describeConfigs(Admin admin, String[] args) throws Exception {
        ConfigResource resource =
                new ConfigResource(ConfigResource.Type.valueOf(args[0].toUpperCase()), args[1]);
        Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
        Map<String, Object> result = new TreeMap<>();
        for (ConfigEntry entry : config.entries()) {
            result.put(
                    entry.name(),
                    Json.obj(
                            "value", entry.value(),
                            "source", entry.source().name(),
                            "readOnly", entry.isReadOnly(),
                            "sensitive", entry.isSensitive()));
        }
        return result;
    }

    private static List<Integer> ids(List<Node> nodes) {
        List<Integer> result = new ArrayList<>();
        for (Node node : nodes) result.add(node.id());
        return result;
    }
}
