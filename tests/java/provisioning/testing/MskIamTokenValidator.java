package provisioning.testing;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerExtensionsValidatorCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallback;

/**
 * A broker-side OAUTHBEARER validator for tests of AWS MSK IAM tokens: it cannot verify an
 * AWS signature (only AWS can), so it checks what it can of the token's structure and takes
 * the principal from the signing access key.
 *
 * <p>An MSK IAM token is the base64url (unpadded) text of a SigV4 presigned URL:
 * {@code https://kafka.REGION.amazonaws.com/?Action=kafka-cluster%3AConnect&X-Amz-Algorithm=
 * AWS4-HMAC-SHA256&X-Amz-Credential=KEY%2FDATE%2FREGION%2Fkafka-cluster%2Faws4_request&
 * X-Amz-Date=...&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=...}. The region
 * comes from the listener's JAAS option {@code region}. Every refusal names its reason in
 * the broker's stdout.
 */
public class MskIamTokenValidator implements AuthenticateCallbackHandler {
    private static final DateTimeFormatter AMZ_DATE =
        DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);
    private String region;

    @Override
    public void configure(Map<String, ?> configs, String mechanism,
                          List<AppConfigurationEntry> jaasConfigEntries) {
        for (AppConfigurationEntry entry : jaasConfigEntries) {
            Object configured = entry.getOptions().get("region");
            if (configured != null) {
                region = configured.toString();
            }
        }
        if (region == null) {
            throw new IllegalArgumentException("MskIamTokenValidator needs the JAAS option region");
        }
    }

    @Override
    public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
        for (Callback callback : callbacks) {
            if (callback instanceof OAuthBearerValidatorCallback validation) {
                try {
                    validation.token(validate(validation.tokenValue()));
                } catch (IllegalArgumentException refused) {
                    System.out.println("MskIamTokenValidator refused a token: "
                        + refused.getMessage());
                    validation.error("invalid_token", null, null);
                }
            } else if (callback instanceof OAuthBearerExtensionsValidatorCallback) {
                // MSK IAM sends no extensions; any sent are ignored.
            } else {
                throw new UnsupportedCallbackException(callback);
            }
        }
    }

    private OAuthBearerToken validate(String value) {
        String url = new String(Base64.getUrlDecoder().decode(value), StandardCharsets.UTF_8);
        URI uri = URI.create(url);
        require("https".equals(uri.getScheme()), "scheme " + uri.getScheme());
        require(("kafka." + region + ".amazonaws.com").equals(uri.getHost()),
            "host " + uri.getHost());
        Map<String, String> query = new HashMap<>();
        for (String pair : uri.getRawQuery().split("&")) {
            String[] kv = pair.split("=", 2);
            query.put(URLDecoder.decode(kv[0], StandardCharsets.UTF_8),
                kv.length > 1 ? URLDecoder.decode(kv[1], StandardCharsets.UTF_8) : "");
        }
        require("kafka-cluster:Connect".equals(query.get("Action")),
            "Action " + query.get("Action"));
        require("AWS4-HMAC-SHA256".equals(query.get("X-Amz-Algorithm")),
            "X-Amz-Algorithm " + query.get("X-Amz-Algorithm"));
        require("host".equals(query.get("X-Amz-SignedHeaders")),
            "X-Amz-SignedHeaders " + query.get("X-Amz-SignedHeaders"));
        String signature = query.getOrDefault("X-Amz-Signature", "");
        require(signature.matches("[0-9a-f]{64}"), "X-Amz-Signature " + signature);
        String date = query.getOrDefault("X-Amz-Date", "");
        Instant signedAt = Instant.from(AMZ_DATE.parse(date));
        String[] credential = query.getOrDefault("X-Amz-Credential", "").split("/");
        require(credential.length == 5 && credential[0].matches("[A-Z0-9]{16,128}")
                && credential[1].equals(date.substring(0, 8)) && credential[2].equals(region)
                && credential[3].equals("kafka-cluster") && credential[4].equals("aws4_request"),
            "X-Amz-Credential " + String.join("/", credential));
        long expires = Long.parseLong(query.getOrDefault("X-Amz-Expires", "-1"));
        require(expires > 0 && expires <= 900, "X-Amz-Expires " + expires);
        long now = System.currentTimeMillis();
        long endsAt = signedAt.toEpochMilli() + expires * 1000;
        require(signedAt.toEpochMilli() <= now + 300_000, "signed in the future: " + date);
        require(endsAt > now, "expired at " + Instant.ofEpochMilli(endsAt));
        String accessKey = credential[0];
        long startedAt = signedAt.toEpochMilli();
        return new OAuthBearerToken() {
            @Override public String value() { return value; }
            @Override public Set<String> scope() { return Set.of(); }
            @Override public long lifetimeMs() { return endsAt; }
            @Override public String principalName() { return accessKey; }
            @Override public Long startTimeMs() { return startedAt; }
        };
    }

    private static void require(boolean holds, String what) {
        if (!holds) {
            throw new IllegalArgumentException("unexpected " + what);
        }
    }

    @Override
    public void close() {
    }
}
