import java.util.List;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.common.TopicPartition;

/**
 * What kafka-transactions.sh does (TransactionsCommand): list, describe, describe-producers
 * and abort of a hanging transaction on TOPIC-0 by its start offset.
 *
 * <p>Usage: TxnAdmin BOOTSTRAP TOPIC TRANSACTIONAL_ID. Prints {"listed": id, "state"} per
 * listed transaction, {"described": id, "state", "producerId", "epoch", "partitions"}, {"producer":
 * id, "epoch", "startOffset", "coordinatorEpoch"} per producer on TOPIC-0, and {"aborted":
 * producerId} once the open transaction that started at the lowest offset was aborted.
 */
public final class TxnAdmin {
    public static void main(String[] args) throws Exception {
        TopicPartition partition = new TopicPartition(args[1], 0);
        try (Admin admin = Admin.create(Clients.base(args[0]))) {
            for (TransactionListing listing : admin.listTransactions().all().get()) {
                Json.print(
                        Json.obj(
                                "listed", listing.transactionalId(),
                                "state", listing.state().toString()));
            }
            TransactionDescription described =
                    admin.describeTransactions(List.of(args[2])).description(args[2]).get();
            Json.print(
                    Json.obj(
                            "described", args[2],
                            "state", described.state().toString(),
                            "producerId", described.producerId(),
                            "epoch", described.producerEpoch(),
                            "partitions", described.topicPartitions().size()));
            List<ProducerState> producers =
                    admin.describeProducers(List.of(partition))
                            .partitionResult(partition)
                            .get()
                            .activeProducers();
            ProducerState hanging = null;
            for (ProducerState producer : producers) {
                OptionalLong start = producer.currentTransactionStartOffset();
                OptionalInt coordinatorEpoch = producer.coordinatorEpoch();
                Json.print(
                        Json.obj(
                                "producer", producer.producerId(),
                                "epoch", producer.producerEpoch(),
                                "startOffset", start.isPresent() ? start.getAsLong() : -1L,
                                "coordinatorEpoch",
                                        coordinatorEpoch.isPresent()
                                                ? coordinatorEpoch.getAsInt()
                                                : -1));
                if (start.isPresent()) {
                    hanging = producer;
                }
            }
            if (hanging != null) {
                // TransactionsCommand.AbortTransactionCommand: coordinator epoch -1 -> 0.
                int coordinatorEpoch = Math.max(hanging.coordinatorEpoch().orElse(0), 0);
                admin.abortTransaction(
                                new AbortTransactionSpec(
                                        partition,
                                        hanging.producerId(),
                                        (short) hanging.producerEpoch(),
                                        coordinatorEpoch))
                        .all()
                        .get();
                Json.print(Json.obj("aborted", hanging.producerId()));
            }
        }
    }
}
