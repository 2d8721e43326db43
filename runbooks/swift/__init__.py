"""Swift runbooks, one module per idea: remount a device (``device``), start a storage
server (``servers``), rebalance and push a ring (``rings``, copying with
``ring_distribution``), populate dispersion (``dispersion``), start a replicator
(``replicator``). Shared helpers are in ``common``.

Importing a module registers its runbooks: the order below is the order in which
``stordoc runbooks`` lists them, so it is kept by hand (isort would sort it).
"""

# isort: off
from runbooks.swift import device  # noqa: F401  swift-device-remount
from runbooks.swift import servers  # noqa: F401  swift-server-start
from runbooks.swift import rings  # noqa: F401  swift-ring-rebalance, swift-ring-push
from runbooks.swift import dispersion  # noqa: F401  swift-dispersion-populate
from runbooks.swift import replicator  # noqa: F401  swift-replicator-start
from runbooks.swift import replace  # noqa: F401  swift-replace-drive
# isort: on
