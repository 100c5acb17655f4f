import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * A word count under exactly_once_v2, for tests/ecosystem/test_streams.py.
 *
 * <p>Usage: WordCount BOOTSTRAP APPLICATION_ID STATE_DIR [GROUP_PROTOCOL]
 *
 * <p>Lines from "lines" (values) are split into words, re-keyed by word (groupBy: a repartition
 * topic), counted into the "counts" store (its changelog topic holds the state), and the counts
 * table is written to "counts" and joined with the "labels" table (word -> label), the join's
 * "label:count" written to "labelled". Every topic has the same partition count, as the join
 * needs.
 *
 * <p>stdout carries one JSON object a line: the application's state changes and what each
 * state store restored from its changelog; the test reads them. Runs until killed.
 */
public final class WordCount {
  private WordCount() {}

  public static void main(String[] args) throws InterruptedException {
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    // "classic" (the default) or "streams" (KIP-1071: the broker assigns the tasks).
    props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args.length > 3 ? args[3] : "classic");
    // Commit (end a transaction) often so a kill lands between and inside transactions.
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    // The killed member leaves the group after 10 s instead of 45 s, so the restart is quick.
    props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10_000);

    StreamsBuilder builder = new StreamsBuilder();
    KTable<String, Long> counts =
        builder.<String, String>stream("lines")
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"));
    counts.toStream().to("counts", Produced.with(Serdes.String(), Serdes.Long()));
    KTable<String, String> labels =
        builder.table("labels", Consumed.with(Serdes.String(), Serdes.String()));
    counts
        .join(labels, (count, label) -> label + ":" + count)
        .toStream()
        .to("labelled", Produced.with(Serdes.String(), Serdes.String()));

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    CountDownLatch stopped = new CountDownLatch(1);
    streams.setStateListener(
        (now, before) -> {
          emit("{\"state\":\"" + now + "\"}");
          if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
            stopped.countDown();
          }
        });
    streams.setGlobalStateRestoreListener(
        new StateRestoreListener() {
          @Override
          public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
            emit(
                String.format(
                    "{\"restore\":\"start\",\"store\":\"%s\",\"topic\":\"%s\",\"partition\":%d,"
                        + "\"from\":%d,\"to\":%d}",
                    store, tp.topic(), tp.partition(), start, end));
          }

          @Override
          public void onBatchRestored(TopicPartition tp, String store, long end, long n) {}

          @Override
          public void onRestoreEnd(TopicPartition tp, String store, long restored) {
            emit(
                String.format(
                    "{\"restore\":\"end\",\"store\":\"%s\",\"topic\":\"%s\",\"partition\":%d,"
                        + "\"records\":%d}",
                    store, tp.topic(), tp.partition(), restored));
          }
        });
    streams.start();
    stopped.await();
    streams.close(Duration.ofSeconds(10));
    System.exit(1);
  }

  private static synchronized void emit(String json) {
    System.out.println(json);
    System.out.flush();
  }
}
