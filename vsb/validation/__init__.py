"""Judge validation: every evaluator (rule checker, VLM judge…) and continuous signal against
the sealed oracle.

The only package that reads ``RUN/oracle/faults.jsonl``. Entry points:
``vsb.validation.judge.validate_run`` (-> ``JudgeReport``, one section per evaluator) and
``vsb.validation.judge.write_judge``; strict and root-cause matching in
``vsb.validation.matching``; typed outputs in ``vsb.validation.models``. Judges to validate
against: ``sim_judge`` (answers from the oracle, wrong at a set rate), ``reference_judges``
(a literal reader and useless judges) served by ``sim_judge.JudgeServer``, and
``reference`` (their rows for the judge page).
"""
