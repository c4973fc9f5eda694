"""Print, as JSON, the driver JVM's compiler and code-cache options, as spark-submit.sh
started it."""

import json

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
jvm = spark.sparkContext._jvm
bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
    jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
print(json.dumps({name: bean.getVMOption(name).getValue()
                  for name in ("TieredStopAtLevel", "ReservedCodeCacheSize", "UseParallelGC",
                               "UseSerialGC")}))
