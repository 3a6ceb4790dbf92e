"""Judge validation: the rule checker and continuous signals against the sealed oracle.

The only package that reads ``RUN/oracle/faults.jsonl``. Entry points:
``vsb.validation.judge.validate_run`` (-> ``JudgeReport``) and
``vsb.validation.judge.write_judge``; typed outputs in ``vsb.validation.models``.
"""
