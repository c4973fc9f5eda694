package provisioning.testing;

import java.util.Map;

import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.AlterConfigPolicy;

/**
 * A broker-side alter policy for tests: refuses a topic retention.ms above a cap (KIP-133),
 * on the topics named with a prefix (every topic when none is configured).
 */
public class CapRetention implements AlterConfigPolicy {
    private long cap = 86_400_000L;
    private String prefix = "";

    @Override
    public void configure(Map<String, ?> configs) {
        Object configured = configs.get("provisioning.testing.max.retention.ms");
        if (configured != null) {
            cap = Long.parseLong(configured.toString());
        }
        Object scoped = configs.get("provisioning.testing.capped.prefix");
        if (scoped != null) {
            prefix = scoped.toString();
        }
    }

    @Override
    public void validate(RequestMetadata requestMetadata) throws PolicyViolationException {
        if (!requestMetadata.resource().name().startsWith(prefix)) {
            return;
        }
        String retention = requestMetadata.configs().get("retention.ms");
        if (retention != null && Long.parseLong(retention) > cap) {
            throw new PolicyViolationException(
                "retention.ms " + retention + " of topic " + requestMetadata.resource().name()
                    + " exceeds this cluster's maximum of " + cap);
        }
    }

    @Override
    public void close() {
    }
}
