"""Entry point: publish a manifest file to a Delta manifest table (provisioning.cli.load_manifest).

    ./spark-submit.sh jobs/load_manifest.py --source manifest.yaml --table warehouse/desired_topics
"""

from provisioning.cli.load_manifest import main

if __name__ == "__main__":
    main()
