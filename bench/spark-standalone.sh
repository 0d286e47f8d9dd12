#!/usr/bin/env bash
# A standalone Spark cluster on this machine: one master and two workers, all bound to 127.0.0.1,
# that accept only clients holding its secret.
#
#   bench/spark-standalone.sh start    # prints the master URL, spark://127.0.0.1:7077
#   export KMC_SPARK_SECRET_FILE=$PWD/spark-standalone/secret
#   kmc check two-phase --const RM=8 --engine spark --master spark://127.0.0.1:7077 --checkpoint runs/rm8
#   bench/spark-standalone.sh status
#   bench/spark-standalone.sh stop
#
# Authentication: Spark's RPC is unauthenticated by default, and binding to 127.0.0.1 keeps other
# machines out but not the other users of this one, who could otherwise submit code to the workers.
# "start" generates a random secret once (256 bits, in $KMC_SPARK_DIR/secret, mode 0600) and starts
# the master and the workers with spark.authenticate=true and that secret (spark.authenticate.secret,
# read from $KMC_SPARK_DIR/auth.conf, mode 0600, never put on a command line); kmc's driver reads it
# from the file named by KMC_SPARK_SECRET_FILE. A client without it is refused. The web UIs are not
# covered by spark.authenticate; they listen on 127.0.0.1 only here (see docs/how-to/spark.md).
#
# Uses the Spark of the installed PySpark (or $SPARK_HOME). Logs, pid files, the secret and the
# workers' scratch space go to $KMC_SPARK_DIR (default ./spark-standalone). Settings, all optional:
# KMC_SPARK_PORT (7077), KMC_WORKER_CORES (1 a worker), KMC_WORKER_MEMORY (1g a worker),
# KMC_SPARK_REGISTER_SECONDS (60: how long "start" waits for the workers to register).
# The executors run the interpreter the workers find as python3, unless the cluster configures
# one (spark.pyspark.python in $SPARK_CONF_DIR/spark-defaults.conf, or PYSPARK_PYTHON here).
set -euo pipefail

if [ -z "${SPARK_HOME:-}" ]; then
    SPARK_HOME=$(python3 -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null) || {
        echo "spark-standalone.sh: no SPARK_HOME and no PySpark: pip install -e '.[spark]' or set SPARK_HOME" >&2
        exit 69
    }
fi
export SPARK_HOME
run_dir=${KMC_SPARK_DIR:-$PWD/spark-standalone}
port=${KMC_SPARK_PORT:-7077}
cores=${KMC_WORKER_CORES:-1}
memory=${KMC_WORKER_MEMORY:-1g}
master_url="spark://127.0.0.1:$port"
master_class=org.apache.spark.deploy.master.Master
worker_class=org.apache.spark.deploy.worker.Worker
export SPARK_LOG_DIR="$run_dir/logs" SPARK_PID_DIR="$run_dir/pids" SPARK_LOCAL_IP=127.0.0.1
export SPARK_IDENT_STRING="kmc-$port"
# the master and the workers keep a few RPC endpoints and start executors: HotSpot's quick compiler
# serves them (its optimizing one would spend its CPU on start-up code; bench/NOTES.md, stop 49)
export SPARK_DAEMON_JAVA_OPTS="${SPARK_DAEMON_JAVA_OPTS:--XX:TieredStopAtLevel=1}"
daemon="$SPARK_HOME/sbin/spark-daemon.sh"
secret_file="$run_dir/secret"
auth_conf="$run_dir/auth.conf"

make_secret() {
    # 32 random bytes as hex, made once and kept (restarting the cluster keeps its clients' secret);
    # the files are created private (umask 077) and checked to be so
    (
        umask 077
        mkdir -p "$run_dir"
        if [ ! -s "$secret_file" ]; then
            od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$secret_file.new"
            mv "$secret_file.new" "$secret_file"
        fi
        chmod 600 "$secret_file"
        # the master's REST submission server (port 6066) does not check spark.authenticate: it stays off
        { echo "spark.authenticate true"; echo "spark.authenticate.secret $(cat "$secret_file")";
          echo "spark.master.rest.enabled false"; } >"$auth_conf.new"
        chmod 600 "$auth_conf.new"
        mv "$auth_conf.new" "$auth_conf"
    )
}

wait_for_master() {
    # the master's log says when it leads (its RPC port is bound): a worker started before that is
    # refused and retries only after 5 to 15 s
    local seconds=${KMC_SPARK_REGISTER_SECONDS:-60}
    for _ in $(seq $((seconds * 10))); do
        if grep -qs 'New state: ALIVE' "$SPARK_LOG_DIR"/*"$master_class"*.out; then
            return 0
        fi
        sleep 0.1
    done
    echo "spark-standalone.sh: the master did not start within $seconds s; see $SPARK_LOG_DIR" >&2
    return 1
}

wait_for_workers() {
    # the master's log names each worker it registers; give them KMC_SPARK_REGISTER_SECONDS (60 s; more on a
    # loaded machine, where three JVMs start slowly)
    local log seconds=${KMC_SPARK_REGISTER_SECONDS:-60}
    for _ in $(seq $((seconds * 10))); do
        log=$(cat "$SPARK_LOG_DIR"/*"$master_class"*.out 2>/dev/null || true)
        if [ "$(grep -c 'Registering worker' <<<"$log")" -ge 2 ]; then
            return 0
        fi
        sleep 0.1
    done
    echo "spark-standalone.sh: the workers did not register with $master_url within $seconds s; see $SPARK_LOG_DIR" >&2
    return 1
}

case "${1:-}" in
start)
    mkdir -p "$SPARK_LOG_DIR" "$SPARK_PID_DIR"
    make_secret
    # spark-daemon.sh waits about 2.5 s after each start before it returns: the master's log is
    # watched meanwhile (its JVM starts in that time or later), and the two workers start side by side
    "$daemon" start "$master_class" 1 --host 127.0.0.1 --port "$port" --webui-port 0 \
        --properties-file "$auth_conf" >/dev/null &
    wait_for_master
    for i in 1 2; do
        "$daemon" start "$worker_class" "$i" --host 127.0.0.1 --webui-port 0 --cores "$cores" \
            --memory "$memory" --work-dir "$run_dir/worker-$i" --properties-file "$auth_conf" "$master_url" >/dev/null &
    done
    wait
    wait_for_workers
    echo "$master_url"
    echo "clients need its secret: export KMC_SPARK_SECRET_FILE=$secret_file" >&2
    ;;
stop)
    for i in 2 1; do
        "$daemon" stop "$worker_class" "$i" >/dev/null || true
    done
    "$daemon" stop "$master_class" 1 >/dev/null || true
    ;;
status)
    "$daemon" status "$master_class" 1 || true
    for i in 1 2; do
        "$daemon" status "$worker_class" "$i" || true
    done
    ;;
*)
    echo "usage: bench/spark-standalone.sh start|stop|status" >&2
    exit 64
    ;;
esac
