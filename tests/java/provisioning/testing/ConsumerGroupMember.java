package provisioning.testing;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A live member of a KIP-848 consumer group for tests: a KafkaConsumer with
 * {@code group.protocol=consumer} that subscribes to one topic and polls until its stdin
 * closes (or it is killed), then leaves the group. It prints {@code assigned <partitions>}
 * once it has a non-empty assignment.
 *
 * <p>Arguments: bootstrap servers, group id, topic.
 */
public final class ConsumerGroupMember {
    private ConsumerGroupMember() {
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3) {
            System.err.println("usage: ConsumerGroupMember <bootstrap> <group> <topic>");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);

        AtomicBoolean open = new AtomicBoolean(true);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // Any input is ignored: only its end stops the member.
                }
            } catch (IOException e) {
                // A broken stdin stops the member too.
            }
            open.set(false);
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(args[2]));
            boolean announced = false;
            while (open.get()) {
                consumer.poll(Duration.ofMillis(200));
                if (!announced && !consumer.assignment().isEmpty()) {
                    System.out.println("assigned " + consumer.assignment());
                    System.out.flush();
                    announced = true;
                }
            }
        }
    }
}
