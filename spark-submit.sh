#!/usr/bin/env bash
# Submit a job of this project with Delta, the Python package and the conf shipped.
#
#   ./spark-submit.sh [spark-submit options] jobs/provision_topics.py SUBCOMMAND --conf FILE [args]
#
# Local mode (no --master, or --master local[...]): Delta jars come from the Maven
# cache that `make jars` fills (.cache/jars/delta). Any other master: Delta comes
# from --packages (the cluster must reach a Maven repository), unless
# PROVISIONING_DELTA_JARS or --delta-jars names local jars (a directory of jars or
# a comma-separated list), which then travel with --jars: for clusters that cannot
# reach Maven Central. The package zip and the conf file travel with --py-files
# and --files; executors run $PYSPARK_PYTHON (default: this checkout's venv).
#
# A master on loopback (spark://127.0.0.1:PORT, spark://localhost:PORT) keeps the
# driver on loopback too, as local mode does.
#
# Spark Connect: `--remote sc://HOST:PORT` (or SPARK_REMOTE in the environment) runs the
# job as a thin client of that server, with no local JVM: this script then starts the
# job with plain Python. The server owns Spark's settings, so options that size or place
# a local driver (--master, --driver-memory, --jars, ...) are ignored with a note, and
# the job ships its own code to the server (the README's "Spark Connect").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${PROVISIONING_VENV:-$here/.venv}"
python="${PYSPARK_PYTHON:-$venv/bin/python}"
delta_package="${DELTA_PACKAGE:-io.delta:delta-spark_4.2_2.13:4.4.0}"
delta_jars="${PROVISIONING_DELTA_JARS:-}"

spark_args=()
app=""
master="local[2]"
deploy_mode="client"
remote="${SPARK_REMOTE:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    *.py) app="$1"; shift; break ;;
    --remote) remote="$2"; shift 2 ;;
    --remote=*) remote="${1#--remote=}"; shift ;;
    --master) master="$2"; spark_args+=("$1" "$2"); shift 2 ;;
    --master=*) master="${1#--master=}"; spark_args+=("$1"); shift ;;
    --deploy-mode) deploy_mode="$2"; spark_args+=("$1" "$2"); shift 2 ;;
    --delta-jars) delta_jars="$2"; shift 2 ;;
    --delta-jars=*) delta_jars="${1#--delta-jars=}"; shift ;;
    *) spark_args+=("$1"); shift ;;
  esac
done
if [ -z "$app" ]; then
  echo "usage: $0 [spark-submit options | --remote sc://HOST:PORT] jobs/provision_topics.py SUBCOMMAND [args]" >&2
  exit 2
fi

if [ -n "$remote" ]; then
  case "$remote" in
    sc://*) ;;
    *) echo "--remote / SPARK_REMOTE: expected sc://HOST:PORT" >&2; exit 2 ;;
  esac
  i=0
  while [ $i -lt ${#spark_args[@]} ]; do
    opt="${spark_args[$i]}"
    case "$opt" in
      --master|--deploy-mode|--driver-memory|--executor-memory|--executor-cores|\
      --num-executors|--total-executor-cores|--jars|--packages|--py-files|--files|\
      --delta-jars|--name|--driver-java-options)
        echo "note: $opt is ignored with Spark Connect (the server owns it)" >&2
        i=$((i + 2)) ;;
      --master=*|--deploy-mode=*|--driver-memory=*|--executor-memory=*|--jars=*|\
      --packages=*|--py-files=*|--files=*|--delta-jars=*|--name=*)
        echo "note: ${opt%%=*} is ignored with Spark Connect (the server owns it)" >&2
        i=$((i + 1)) ;;
      *)
        echo "$opt: not an option of a Spark Connect run; Spark settings go in the conf's" \
             "spark.settings (runtime SQL settings) or on the server" >&2
        exit 2 ;;
    esac
  done
  export SPARK_REMOTE="$remote"
  export PYTHONPATH="$here/lib:$here${PYTHONPATH:+:$PYTHONPATH}"
  exec "$python" "$app" "$@"
fi

# The job's own --conf: ship the file, and in cluster deploy mode point at the shipped copy.
app_args=()
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --conf)
      files+=("$2")
      if [ "$deploy_mode" = cluster ]; then app_args+=("$1" "$(basename "$2")"); else app_args+=("$1" "$2"); fi
      shift 2 ;;
    *) app_args+=("$1"); shift ;;
  esac
done

dist="$here/.cache/dist"
mkdir -p "$dist"
# Named by its content and built under a per-process temp name: runs started at the same
# time (cron overlap, parallel tests) never rewrite a zip another run's workers read.
# The package zip (only lib/provisioning and schemas: what the job runs), named by its
# content and built under a per-process temp name: runs started at the same time (cron
# overlap, parallel tests) never rewrite a zip another run's workers read. Then the
# session settings every run needs, from provisioning.session (read without Spark).
mapfile -t built < <("$python" - "$here" "$dist" <<'PY'
import hashlib, os, pathlib, sys, zipfile
root, dist = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
tmp = dist / f".provisioning.{os.getpid()}.tmp"
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
    for base, package in ((root / "lib", "provisioning"), (root, "schemas")):
        for f in sorted((base / package).rglob("*.py")):
            z.write(f, f.relative_to(base).as_posix())
out = dist / f"provisioning-{hashlib.sha256(tmp.read_bytes()).hexdigest()[:16]}.zip"
tmp.replace(out)
print(out)
sys.path.insert(0, str(root / "lib"))
from provisioning.session import submit_arguments
print("\n".join(submit_arguments()))
PY
)
package_zip="${built[0]}"
session_conf=("${built[@]:1}")
if [ -z "$package_zip" ] || [ ${#session_conf[@]} -eq 0 ]; then
  echo "could not build the package zip or read the session settings with $python" >&2
  exit 2
fi

if [ -x "$venv/bin/spark-submit" ]; then submit="$venv/bin/spark-submit"; else submit="spark-submit"; fi

# Delta's jars as a comma-separated list: $1 is a directory of jars or already a list.
delta_jar_list() {
  if [ -d "$1" ]; then
    ls "$1"/*.jar 2>/dev/null | paste -sd, -
  else
    echo "$1"
  fi
}

delta_conf=("${session_conf[@]}")
loopback_conf=(--conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1)
case "$master" in
  local*)
    jars_dir="${delta_jars:-$here/.cache/jars/delta}"
    jars=$(delta_jar_list "$jars_dir")
    if [ -z "$jars" ]; then
      echo "no Delta jars in $jars_dir: run 'make jars' (or set PROVISIONING_DELTA_JARS)" >&2
      exit 2
    fi
    # Local runs stay on loopback: the driver never binds or advertises another address.
    export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
    delta_conf+=(--jars "$jars" --conf spark.ui.showConsoleProgress=false
                 "${loopback_conf[@]}"
                 --conf "spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=file:$here/conf/log4j2.properties"
                 --conf spark.databricks.delta.snapshotPartitions=2
                 --conf spark.sql.shuffle.partitions=4)
    has_master=0
    for a in "${spark_args[@]+"${spark_args[@]}"}"; do case "$a" in --master|--master=*) has_master=1 ;; esac; done
    [ "$has_master" = 1 ] || spark_args+=(--master "$master")
    ;;
  *)
    if [ -n "$delta_jars" ]; then
      jars=$(delta_jar_list "$delta_jars")
      if [ -z "$jars" ]; then
        echo "no Delta jars in $delta_jars (PROVISIONING_DELTA_JARS / --delta-jars)" >&2
        exit 2
      fi
      delta_conf+=(--jars "$jars")
    else
      delta_conf+=(--packages "$delta_package")
    fi
    case "$master" in
      spark://127.0.0.1:*|spark://localhost:*)
        export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
        delta_conf+=("${loopback_conf[@]}") ;;
    esac
    ;;
esac

# The driver JVM maps the classes a run loads from a class-data-sharing archive when
# `make driver-archive` made one (client deploy mode: the driver is this JVM).
# PROVISIONING_DRIVER_ARCHIVE names another archive, or is "off". A stale archive
# (other JDK or Spark jars) is ignored by the JVM, which then loads classes as usual.
driver_archive="${PROVISIONING_DRIVER_ARCHIVE:-$here/.cache/driver/driver.jsa}"
if [ "$deploy_mode" = client ] && [ "$driver_archive" != off ] && [ -f "$driver_archive" ]; then
  export SPARK_SUBMIT_OPTS="${SPARK_SUBMIT_OPTS:+$SPARK_SUBMIT_OPTS }-XX:SharedArchiveFile=$driver_archive -Xshare:auto -Xlog:cds=off,cds+dynamic=off"
fi

# A run is short and its driver mostly waits: a client-mode driver JVM compiles with C1
# only and collects with the parallel GC, which takes about a third off a cold run's Spark
# and Delta start-up (BENCHMARKS.md). PROVISIONING_DRIVER_JIT=full keeps the JVM's
# defaults (long computations in local mode, where the tasks run in the driver JVM).
if [ "$deploy_mode" = client ] && [ "${PROVISIONING_DRIVER_JIT:-quick}" = quick ]; then
  export SPARK_SUBMIT_OPTS="${SPARK_SUBMIT_OPTS:+$SPARK_SUBMIT_OPTS }-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
fi

files_arg=()
if [ ${#files[@]} -gt 0 ]; then files_arg=(--files "$(IFS=,; echo "${files[*]}")"); fi

export PYSPARK_PYTHON="$python"
export PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-$python}"
exec "$submit" "${spark_args[@]+"${spark_args[@]}"}" "${delta_conf[@]}" \
  --py-files "$package_zip" "${files_arg[@]+"${files_arg[@]}"}" \
  "$app" "${app_args[@]+"${app_args[@]}"}"
