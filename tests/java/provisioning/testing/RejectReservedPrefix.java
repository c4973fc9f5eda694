package provisioning.testing;

import java.util.Map;

import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.CreateTopicPolicy;

/** A broker-side create policy for tests: refuses topics under a reserved prefix (KIP-108). */
public class RejectReservedPrefix implements CreateTopicPolicy {
    private String prefix = "reserved.";

    @Override
    public void configure(Map<String, ?> configs) {
        Object configured = configs.get("provisioning.testing.reserved.prefix");
        if (configured != null) {
            prefix = configured.toString();
        }
    }

    @Override
    public void validate(RequestMetadata requestMetadata) throws PolicyViolationException {
        String topic = requestMetadata.topic();
        if (topic.startsWith(prefix)) {
            throw new PolicyViolationException(
                "topic " + topic + " uses the reserved prefix " + prefix);
        }
    }

    @Override
    public void close() {
    }
}
