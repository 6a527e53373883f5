"""The release tier (issue 28): the cluster and the images of the real-cluster tier
(tests/realkube/conftest.py, loaded here under the name realkube_tier), without its session
install: this tier installs Argo CD and krmpod itself, from dist/ only."""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TIER = os.path.join(os.path.dirname(HERE), "realkube")
sys.path.insert(0, TIER)
sys.path.insert(0, os.path.dirname(HERE))

_spec = importlib.util.spec_from_file_location("realkube_tier", os.path.join(TIER, "conftest.py"))
realkube_tier = importlib.util.module_from_spec(_spec)
sys.modules["realkube_tier"] = realkube_tier
_spec.loader.exec_module(realkube_tier)

# the tier's session fixtures, as they are: the cluster (started unless it runs, under the
# tier's lock) and the images (imported only when their content changed)
cluster = realkube_tier.cluster
built_images = realkube_tier.built_images
