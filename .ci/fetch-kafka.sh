#!/usr/bin/env bash
# Fetches Apache Kafka's broker jars (the version pinned in test/support/kafka/pom.xml) from
# Maven Central into .cache/kafka-<version>/libs, once. Later runs, and the tests, use the cache
# and need no network. Prints the libs directory. Fails loudly when Java or Maven is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pom="$root/test/support/kafka/pom.xml"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom" | head -n 1)"
[ -n "$version" ] || { echo "fetch-kafka: no <kafka.version> in $pom" >&2; exit 1; }
cache="$root/.cache/kafka-$version"
libs="$cache/libs"

if [ -f "$libs/.complete" ]; then
  echo "$libs"
  exit 0
fi

command -v java >/dev/null || { echo "fetch-kafka: java not found (Kafka $version needs Java 17+: apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
command -v mvn >/dev/null || { echo "fetch-kafka: mvn not found (apt-get install maven)" >&2; exit 1; }

# Copy into a scratch directory and rename, so an interrupted fetch never looks complete.
partial="$cache/libs.partial.$$"
rm -rf "$partial"
mkdir -p "$cache"
trap 'rm -rf "$partial"' EXIT
mvn_log="$cache/mvn.log"
for attempt in 1 2 3; do
  if mvn -B -q -f "$pom" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$partial" >"$mvn_log" 2>&1; then
    break
  fi
  cat "$mvn_log" >&2
  [ "$attempt" -lt 3 ] || { echo "fetch-kafka: mvn could not fetch org.apache.kafka:kafka_2.13:$version" >&2; exit 1; }
  echo "fetch-kafka: mvn failed (attempt $attempt), retrying" >&2
  sleep $((attempt * 5))
done
ls "$partial"/kafka_2.13-"$version".jar >/dev/null
touch "$partial/.complete"
rm -rf "$libs"
mv "$partial" "$libs"
echo "$libs"
