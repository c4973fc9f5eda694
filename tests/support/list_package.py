"""Print, as JSON, the files of every zip on this driver's sys.path (the shipped package)."""

import json
import os
import sys
import zipfile

print(json.dumps({p: sorted(zipfile.ZipFile(p).namelist())
                  for p in sys.path if p.endswith(".zip") and os.path.isfile(p)}))
