"""A verification sample of a model's own frames (issue 46): ``vsb human verify`` draws it
and writes the items people answer (``sample.py``; the page in ``page.py``), ``vsb human
verify-import`` checks and stores their answers (``answers.py``), and ``vsb score
--corrected`` corrects the model with the judge's error measured on them
(``vsb.validation.correct.measured``). The file formats are in
``vsb.validation.correct.verified``.
"""
