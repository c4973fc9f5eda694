"""Entry point of the job (the CLI is provisioning.cli).

    ./spark-submit.sh jobs/provision_topics.py snapshot --conf conf/local.yaml
"""

from provisioning.cli import main

if __name__ == "__main__":
    main()
