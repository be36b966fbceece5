"""Everything of mosesrnn that runs Moses, in one wing: rewriting its moses.ini, its programs, tuning.

A library: it knows nothing of the command line. The commands ``moses-ini``, ``binarize``, ``tune`` and
``mert-report`` (:mod:`mosesrnn.cli.moses`) parse their options and call one function here each.

- :mod:`.ini_update`: the one moses.ini updater (``moses-ini``): a phrase table pointed at a scored
  table with its new columns' weights, every path made absolute (:mod:`.ini_paths`), a NeuralLM
  feature added (:mod:`.neural_lm`); the new columns' initial weights come from :mod:`.new_columns`;
- :mod:`.binarize`: the binarized tables (``processPhraseTableMin``, ``CreateOnDiskPt``);
- :mod:`.tools`: finding and running Moses' programs; :mod:`.mert_moses`: ``mert-moses.pl`` and the
  decoder, one run at a time; :mod:`.mert_report`: a tuning's iterations and their weights;
- :mod:`.route`: the ``tune`` command: its plan, its stages, its report.

The moses.ini format itself (its lines, phrase tables and weights) is a format among the formats,
:mod:`mosesrnn.formats.moses_ini`: our MERT and ``prune`` read it without the wing. Modules import from their
own package (``from moses_integration.ini_update import update_moses_ini``); this one imports nothing.
"""
