"""``kmc explore``: a local web page to step through a model by hand and to read a trace or scenario
as a story.

One module per idea: ``session`` computes what the page shows from the model (the state broker by
broker, the enabled actions with the rules they follow, every property's status, the diagram, the
replay under every release, the exported trace); ``rules`` maps each action to the rows of the rule
table it follows; ``runner`` runs the local breadth-first engine from the current state in the
background; ``server`` is the HTTP server and its JSON API; ``cli`` the ``kmc explore`` command;
``page.html`` the page (vanilla JS and CSS, no build step).
"""
