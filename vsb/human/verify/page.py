"""The verification page: one question about one picture at a time, answered yes, no or
can't tell (buttons at least 44 px tall for a finger; keys ``y`` / ``n`` / ``u`` or ``1`` /
``2`` / ``3``, ``←`` / ``→`` to move), kept in the browser's storage and exported as JSON
(``vsb human verify-import`` reads it). One self-contained file, served by ``vsb human
serve DIR`` with its pictures under ``rate/``; it names no model, condition or story.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from vsb.validation.correct.verified import SampleItem

EXPORT_KIND = "vsb-verify-answers"

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Verify: does the picture show it?</title>
<style>
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:46rem;padding:.75rem;color:#111}
img{display:block;max-width:100%;max-height:60vh;margin:.5rem auto;image-rendering:pixelated}
#q{font-size:1.15rem;min-height:3.2em}
.row{display:flex;gap:.5rem;flex-wrap:wrap}
button{min-height:44px;min-width:44px;font-size:1rem;padding:.5rem 1rem;flex:1}
button.on{outline:3px solid #036;font-weight:bold}
#bar{font-size:.9rem;color:#444;margin:.5rem 0}
</style></head><body>
<h1 style="font-size:1.2rem">Does the picture show it?</h1>
<p>Answer what the picture shows, not what seems likely. Keys: y / n / u (or 1 / 2 / 3),
&larr; and &rarr; to move.</p>
<div id="bar"></div>
<img id="pic" alt="the picture the question asks about">
<p id="q"></p>
<div class="row">
<button id="YES">Yes (y)</button><button id="NO">No (n)</button>
<button id="UNSURE">Can't tell (u)</button></div>
<div class="row" style="margin-top:.5rem">
<button id="prev">&larr; Back</button><button id="next">Next &rarr;</button>
<button id="export">Download answers</button></div>
<script id="evaluate-data" type="application/json">__DATA__</script>
<script>
(function(){
var data=JSON.parse(document.getElementById("evaluate-data").textContent);
var key="vsb-verify-"+data.sample, items=data.items;
var saved=JSON.parse(localStorage.getItem(key)||"{}"), i=0;
while(i<items.length-1&&saved[items[i].item_id])i++;
function show(){
  var it=items[i];
  document.getElementById("pic").src=it.image;
  document.getElementById("q").textContent=it.question;
  var done=Object.keys(saved).length;
  document.getElementById("bar").textContent=
    "Item "+(i+1)+" of "+items.length+" \\u2014 "+done+" answered";
  ["YES","NO","UNSURE"].forEach(function(a){
    document.getElementById(a).className=saved[it.item_id]===a?"on":"";});
}
function answer(a){
  saved[items[i].item_id]=a; localStorage.setItem(key,JSON.stringify(saved));
  if(i<items.length-1)i++; show();
}
function move(d){i=Math.max(0,Math.min(items.length-1,i+d));show();}
function exportAnswers(){
  var out={kind:"__KIND__",version:"1.0",sample_id:data.sample,answers:[]};
  items.forEach(function(it){ if(saved[it.item_id])
    out.answers.push({item_id:it.item_id,answer:saved[it.item_id],sha256:it.sha256});});
  var a=document.createElement("a");
  a.href=URL.createObjectURL(new Blob([JSON.stringify(out)],{type:"application/json"}));
  a.download="answers-"+data.sample+".json"; a.click();
}
["YES","NO","UNSURE"].forEach(function(a){
  document.getElementById(a).onclick=function(){answer(a);};});
document.getElementById("prev").onclick=function(){move(-1);};
document.getElementById("next").onclick=function(){move(1);};
document.getElementById("export").onclick=exportAnswers;
document.addEventListener("keydown",function(e){
  var k=e.key.toLowerCase();
  if(k==="y"||k==="1")answer("YES"); else if(k==="n"||k==="2")answer("NO");
  else if(k==="u"||k==="3")answer("UNSURE");
  else if(e.key==="ArrowLeft")move(-1); else if(e.key==="ArrowRight")move(1);
});
show();
})();
</script></body></html>
"""


def page_html(sample_id: str, items: Sequence[SampleItem]) -> str:
    """The page for ``items`` (only their ids, pictures, hashes and questions)."""
    data = {"sample": sample_id, "items": [
        {"item_id": x.item_id, "image": x.image, "sha256": x.sha256, "question": x.question}
        for x in items]}  # fmt: skip
    text = json.dumps(data, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    return _PAGE.replace("__DATA__", text).replace("__KIND__", html.escape(EXPORT_KIND))
