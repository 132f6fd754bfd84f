// The dashboard: one page, no external assets. It polls /api/status every second, keeps the
// history itself (curves, server load over time) and draws on canvases. When the job ends
// (the status says so, or the launcher stops answering: the page came from it, so three
// failed polls in a row before any answer mean it is gone too) it says so and stops polling.
#include "app/launcher_monitor.h"

namespace trib::app {

const char* dashboard_page() {
  return R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>trib dashboard</title><link rel="icon" href="data:,">
<style>
body{font:14px system-ui,sans-serif;margin:16px;background:#fafafa;color:#222}
h1{font-size:18px;margin:0 0 8px}h2{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#eee}.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px}
canvas{background:#fff;border:1px solid #ddd}pre{background:#fff;border:1px solid #ddd;padding:6px;font-size:12px}
.wide{grid-column:span 2}#state.ended{color:#b00;font-weight:bold}#state.running{color:#070}
</style></head><body>
<h1>trib: <span id="job">job</span> <span id="strategy"></span> &middot; generation <span id="gen">-</span> &middot; <span id="state" class="running">connecting</span></h1>
<div class="grid">
<div><h2>Members</h2><table id="members"><tr><th>role</th><th>index</th><th>state</th></tr></table></div>
<div class="wide"><h2>Workers</h2><table id="workers"><tr><th>worker</th><th>step</th><th>steps/s</th><th>images/s</th><th>loss</th><th>lr</th><th>wait ms</th><th>compute ms</th><th>exchange ms</th></tr></table></div>
<div><h2>Training loss</h2><canvas id="loss" width="420" height="200"></canvas></div>
<div><h2>Test accuracy</h2><canvas id="acc" width="420" height="200"></canvas></div>
<div><h2>Server load (bytes/s)</h2><canvas id="load" width="420" height="200"></canvas></div>
<div><h2>Staleness</h2><canvas id="stale" width="420" height="200"></canvas></div>
<div><h2>Placement</h2><table id="servers"><tr><th>server</th><th>MB in</th><th>MB out</th><th>updates</th><th>late drops</th></tr></table><p id="balance"></p><pre id="placement"></pre></div>
<div><h2>Stream: consumer lag and freshness</h2><div id="stream">no stream metrics in this job</div></div>
</div>
<script>
"use strict";
const colors=["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#e377c2","#7f7f7f"];
const hist={loss:{},acc:{},load:{},last:{},lastBytes:{}};
let timer=null,seen=false,failures=0;
function $(id){return document.getElementById(id);}
function fmt(v,d){return v===null||v===undefined?"-":Number(v).toFixed(d);}
function push(map,key,t,v){if(v===null||v===undefined)return;(map[key]=map[key]||[]).push([t,v]);if(map[key].length>600)map[key].shift();}
function plot(id,series,label){
  const c=$(id),g=c.getContext("2d"),W=c.width,H=c.height,L=50,B=20;
  g.clearRect(0,0,W,H);let x0=Infinity,x1=-Infinity,y0=Infinity,y1=-Infinity;
  for(const k in series)for(const [x,y] of series[k]){x0=Math.min(x0,x);x1=Math.max(x1,x);y0=Math.min(y0,y);y1=Math.max(y1,y);}
  g.strokeStyle="#999";g.strokeRect(L,5,W-L-5,H-B-5);g.fillStyle="#444";g.font="11px sans-serif";
  if(!isFinite(x0)){g.fillText("waiting for data",L+10,H/2);return;}
  if(x1===x0)x1=x0+1;if(y1===y0){const p=Math.max(Math.abs(y0)*0.05,1e-6);y0-=p;y1+=p;}
  g.fillText(y1.toPrecision(3),2,14);g.fillText(y0.toPrecision(3),2,H-B);g.fillText(label,L+4,H-4);
  let i=0;for(const k in series){g.strokeStyle=colors[i++%colors.length];g.beginPath();
    series[k].forEach(([x,y],j)=>{const px=L+(x-x0)/(x1-x0)*(W-L-5),py=5+(1-(y-y0)/(y1-y0))*(H-B-5);j?g.lineTo(px,py):g.moveTo(px,py);});
    g.stroke();g.fillStyle=g.strokeStyle;g.fillText(k,W-70,16+14*(i-1));}
}
function bars(id,counts){
  const c=$(id),g=c.getContext("2d"),W=c.width,H=c.height;g.clearRect(0,0,W,H);
  const n=counts.length,m=Math.max(1,...counts);g.font="11px sans-serif";
  if(!n){g.fillStyle="#444";g.fillText("no parameter servers",20,H/2);return;}
  counts.forEach((v,i)=>{const w=(W-20)/n,h=(H-30)*v/m;g.fillStyle="#1f77b4";g.fillRect(10+i*w,H-20-h,w-2,h);
    g.fillStyle="#444";g.fillText(i===n-1?i+"+":String(i),10+i*w,H-6);});
}
function rows(id,header,list){const t=$(id);t.innerHTML=header;for(const r of list){const tr=t.insertRow();for(const v of r){tr.insertCell().textContent=v;}}}
function render(s){
  seen=true;const t=s.time;$("job").textContent=s.job;$("strategy").textContent="("+s.strategy+")";$("gen").textContent=s.generation??"-";
  const members=s.roster&&s.roster.length?s.roster.map(m=>[m.role,m.index,m.state+(m.reason?": "+m.reason:"")]):s.members.map(m=>[m.role,m.index,m.up?"up":"unreachable"]);
  members.sort((a,b)=>a[0]<b[0]?-1:a[0]>b[0]?1:a[1]-b[1]);
  rows("members","<tr><th>role</th><th>index</th><th>state</th></tr>",members);
  const w=s.workers.map(x=>{const key="worker"+x.index,l=hist.last[key];const rate=l&&x.step!==null&&t>l[0]?(x.step-l[1])/(t-l[0]):null;
    hist.last[key]=[t,x.step];push(hist.loss,key,t,x.loss);if(x.eval_accuracy!==null)push(hist.acc,key,x.step,x.eval_accuracy);
    return [key,fmt(x.step,0),fmt(rate,1),fmt(x.images_per_s,0),fmt(x.loss,4),x.lr===null?"-":Number(x.lr).toPrecision(3),fmt(x.wait_s*1e3,1),fmt(x.compute_s*1e3,1),fmt(x.exchange_s*1e3,1)];});
  rows("workers","<tr><th>worker</th><th>step</th><th>steps/s</th><th>images/s</th><th>loss</th><th>lr</th><th>wait ms</th><th>compute ms</th><th>exchange ms</th></tr>",w);
  const stale=[];let tot=[];
  rows("servers","<tr><th>server</th><th>MB in</th><th>MB out</th><th>updates</th><th>late drops</th></tr>",s.servers.map(x=>{
    const key="ps"+x.index,b=(x.bytes_in||0)+(x.bytes_out||0),l=hist.lastBytes[key];if(l&&t>l[0])push(hist.load,key,t,(b-l[1])/(t-l[0]));
    hist.lastBytes[key]=[t,b];tot.push(b);x.staleness.forEach((v,i)=>stale[i]=(stale[i]||0)+v);
    return [key,fmt(x.bytes_in/1e6,1),fmt(x.bytes_out/1e6,1),fmt(x.updates,0),fmt(x.late_drops,0)];}));
  if(tot.length){const mean=tot.reduce((a,b)=>a+b,0)/tot.length;$("balance").textContent="bytes per server: max/mean "+(mean>0?(Math.max(...tot)/mean).toFixed(2):"-");}
  $("placement").textContent=s.placement||"";
  const st=s.workers.filter(x=>x.consumer_lag!==null||x.freshness_s!==null);
  if(st.length){$("stream").innerHTML="";const tb=document.createElement("table");tb.id="streamtable";$("stream").appendChild(tb);
    rows("streamtable","<tr><th>worker</th><th>consumer lag</th><th>freshness s (mean)</th><th>events/s</th></tr>",
      st.map(x=>["worker"+x.index,fmt(x.consumer_lag,0),fmt(x.freshness_s,2),fmt(x.events_per_s,0)]));}
  plot("loss",hist.loss,"time");plot("acc",hist.acc,"step");plot("load",hist.load,"time");bars("stale",stale);
  if(s.ended)ended("job ended");else{$("state").textContent="running";$("state").className="running";}
}
function ended(why){$("state").textContent=why;$("state").className="ended";if(timer){clearInterval(timer);timer=null;}}
async function poll(){
  try{const r=await fetch("api/status",{cache:"no-store"});if(!r.ok)throw new Error("HTTP "+r.status);render(await r.json());}
  catch(e){if(seen||++failures>=3)ended("job ended (the launcher no longer answers)");else{$("state").textContent="waiting for the launcher";}}
}
poll();timer=setInterval(poll,1000);
</script></body></html>
)HTML";
}

}  // namespace trib::app
