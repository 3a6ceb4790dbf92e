"""Human evaluation: the rating files of the blinded ``/evaluate`` page, their import and
statistics, synthetic raters, and the page's session data.

Modules, in data-flow order::

    models     the rating file (typed, versioned; rating.schema.json is generated from it)
    schema     the committed JSON Schema and its generator
    session    what the /evaluate page embeds (items pool from a release's SiteData)
    load       reading and validating rating files (one line per problem)
    stats      Krippendorff's alpha, ICC(2,1)/(2,k), story-clustered bootstrap means
    preference win-rate tables and Bradley-Terry strengths with bootstrap CIs
    mixed      rating ~ model + (1|story) + (1|rater) with statsmodels (crossed effects)
    results    typed models of ``human/report.json``
    report     exclusions and the whole report; writing it with its CSVs
    simulate   synthetic raters (labelled synthetic everywhere) for pipeline checks
"""
