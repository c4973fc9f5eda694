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
# reach Maven Central. What the executors import beyond a stock PySpark (this package,
# its schemas, kafka-python, tenacity; in cluster deploy mode also the driver's click, PyYAML,
# tabulate, Jinja2 and MarkupSafe)
# travels as zips with --py-files, and the conf file with --files.
#
# Python: the driver runs $PYSPARK_DRIVER_PYTHON (default: this checkout's venv). In local
# mode the executors run the same. On any other master they run the cluster's Python:
# spark.pyspark.python, or $PYSPARK_PYTHON when you set it, or a packed environment given
# with --archives (README: Where it runs); never a path of this machine.
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
python="${PYSPARK_DRIVER_PYTHON:-$venv/bin/python}"
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
    --deploy-mode=*) deploy_mode="${1#--deploy-mode=}"; spark_args+=("$1"); shift ;;
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

# One Python process before any JVM. For a job whose entry point is a click command of
# provisioning.cli (jobs/provision_topics.py, jobs/load_manifest.py), help, the version and
# usage errors are answered here, from Python alone (provisioning.cli.answers), and the
# script exits with click's code: no JVM starts to print text. Otherwise it prints the zips
# of what the executors import (provisioning.session.SHIPPED_PACKAGES, plus the driver's
# click, PyYAML, tabulate, Jinja2 and MarkupSafe in cluster deploy mode), each named by its
# content, and the session settings every run needs, all read from provisioning.session
# without Spark. Those lines go to fd 4, read back here; what click prints goes to this
# script's stdout and stderr.
exec 3>&1
prepared=$("$python" - "$here" "$deploy_mode" "$app" "$@" 4>&1 1>&3 3>&- <<'PY'
import ast
import importlib
import os
import sys

root, deploy_mode, app, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path[:0] = [f"{root}/lib", root]
out = os.fdopen(4, "w")
try:
    with open(app, encoding="utf-8") as source:
        body = ast.parse(source.read()).body
    entry = next((node.module for node in body if isinstance(node, ast.ImportFrom)
                  and (node.module or "").startswith("provisioning.cli")
                  and any(alias.name == "main" for alias in node.names)), None)
except (OSError, SyntaxError, ValueError):
    entry = None  # spark-submit reports an app it cannot run
from provisioning.session import SHIPPED_PACKAGES, package_zip, submit_arguments

if entry is not None:
    # Arguments that named a run once name a run again for the same code and click: they
    # are remembered (by their digest, beside the zips), so a scheduled run does not import
    # the command line twice. The driver parses them again in any case.
    import hashlib
    import importlib.util

    click_file = getattr(importlib.util.find_spec("click"), "origin", None) or ""
    key = hashlib.sha256("\0".join([package_zip("provisioning").name, click_file,
                                     str(os.path.getmtime(click_file)) if click_file else "",
                                     entry, *args]).encode()).hexdigest()[:32]
    known = package_zip("provisioning").parent / f"run-args-{key}"
    if not known.exists():
        from provisioning.cli.answers import answer

        code = answer(importlib.import_module(entry).main, args, os.path.basename(app))
        if code is not None:
            sys.stdout.flush()
            print(f"answered {code}", file=out)
            sys.exit(0)
        known.touch()

names = [*SHIPPED_PACKAGES, *(("click", "yaml", "tabulate", "jinja2", "markupsafe")
                              if deploy_mode == "cluster" else ())]
print(",".join(str(package_zip(n)) for n in names), file=out)
print("\n".join(submit_arguments()), file=out)
PY
) || { echo "could not build the package zips or read the session settings with $python" >&2
       exit 2; }
exec 3>&-
mapfile -t built <<< "$prepared"
case "${built[0]:-}" in answered\ *) exit "${built[0]#answered }" ;; esac

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

py_files="${built[0]:-}"
session_conf=("${built[@]:1}")
if [ -z "$py_files" ] || [ ${#session_conf[@]} -eq 0 ]; then
  echo "could not build the package zips or read the session settings with $python" >&2
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
                 --conf "spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=file:$here/conf/log4j2.properties")
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
# and Delta start-up (BENCHMARKS.md). C1 alone would also shrink the code cache to 48 MiB
# (the JVM's size without tiered compilation), which Spark's generated classes can fill: a
# full code cache fails the run ("Out of space in CodeCache for adapters"), so it keeps
# the tiered default of 240 MiB. PROVISIONING_DRIVER_JIT=full keeps the JVM's defaults
# (long computations in local mode, where the tasks run in the driver JVM). An option the
# user's SPARK_SUBMIT_OPTS sets already (a garbage collector, a code cache size) is theirs.
if [ "$deploy_mode" = client ] && [ "${PROVISIONING_DRIVER_JIT:-quick}" = quick ]; then
  jit=()
  case " ${SPARK_SUBMIT_OPTS:-} " in *" -XX:TieredStopAtLevel="*) ;; *) jit+=(-XX:TieredStopAtLevel=1) ;; esac
  case " ${SPARK_SUBMIT_OPTS:-} " in *" -XX:ReservedCodeCacheSize="*) ;; *) jit+=(-XX:ReservedCodeCacheSize=240m) ;; esac
  case " ${SPARK_SUBMIT_OPTS:-} " in *" -XX:+Use"*GC" "*) ;; *) jit+=(-XX:+UseParallelGC) ;; esac
  if [ ${#jit[@]} -gt 0 ]; then
    export SPARK_SUBMIT_OPTS="${SPARK_SUBMIT_OPTS:+$SPARK_SUBMIT_OPTS }${jit[*]}"
  fi
fi

files_arg=()
if [ ${#files[@]} -gt 0 ]; then files_arg=(--files "$(IFS=,; echo "${files[*]}")"); fi

export PYSPARK_DRIVER_PYTHON="$python"
python_conf=()
case "$master" in
  local*) export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$python}" ;;
  *)
    # The driver keeps this venv even when spark.pyspark.python names the executors' Python
    # (Spark would otherwise start the driver with it too).
    if [ "$deploy_mode" = client ]; then
      given=0
      for a in "${spark_args[@]+"${spark_args[@]}"}"; do
        case "$a" in spark.pyspark.driver.python=*) given=1 ;; esac
      done
      [ "$given" = 1 ] || python_conf=(--conf "spark.pyspark.driver.python=$python")
    fi
    ;;
esac
exec "$submit" "${spark_args[@]+"${spark_args[@]}"}" "${delta_conf[@]}" \
  "${python_conf[@]+"${python_conf[@]}"}" \
  --py-files "$py_files" "${files_arg[@]+"${files_arg[@]}"}" \
  "$app" "${app_args[@]+"${app_args[@]}"}"
