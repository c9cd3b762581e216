import numpy as np
def coeff(r):
    am=(2*r-1)/(r+1); af=r/(r+1); g=.5+af-am; return am,af,.25*(g+.5)**2,g
def run(wh, r, start, n=6):
    am,af,b,g=coeff(r); h=1.0; w=wh
    x,v=1.0,0.0; vd=-w*w*x
    a = {"exact":vd, "zero":0.0}[start] if isinstance(start,str) else start(w)
    if start=="zero": vd_=0.0; vd=0.0
    E0=.5*(v*v+w*w*x*x); out=[]
    for k in range(n):
        # unknown y=vd1: a1=((1-af)y+af vd-am a)/(1-am); x1=x+hv+h2(.5-b)a+h2 b a1; y=-w2 x1
        c=(1-af)/(1-am); a_0=(af*vd-am*a)/(1-am)
        # y = -w2 (x+v+(.5-b)a+b(c y+a_0))
        y=-w*w*(x+v+(.5-b)*a+b*a_0)/(1+w*w*b*c)
        a1=c*y+a_0; x=x+v+(.5-b)*a+b*a1; v=v+(1-g)*a+g*a1; vd=y; a=a1
        out.append(.5*(v*v+w*w*x*x)/E0)
    return out
for wh in [0.3, 2, 6, 35]:
    for r in [0.0, 0.6, 0.9]:
        print(wh, r, "exact start", " ".join(f"{e:.3g}" for e in run(wh,r,"exact")))
        print(wh, r, "zero start ", " ".join(f"{e:.3g}" for e in run(wh,r,"zero")))
print("implicit start a0 = -w2 x0/(1+(th wh)^2)")
for th in [0.6, 1.0, 2.0]:
  for wh in [0.3, 2, 6, 35, 200]:
    for r in [0.6]:
        def st(w, th=th): return -w*w/(1+(th*w)**2)
        am,af,b,g=coeff(r)
        # need vd too: patch run to use same value for vd and a
        def run2(wh):
            h=1; w=wh; x,v=1.0,0.0; vd=a=st(w); E0=.5*w*w; out=[]
            for k in range(8):
                c=(1-af)/(1-am); a_0=(af*vd-am*a)/(1-am)
                y=-w*w*(x+v+(.5-b)*a+b*a_0)/(1+w*w*b*c)
                a1=c*y+a_0; x=x+v+(.5-b)*a+b*a1; v=v+(1-g)*a+g*a1; vd=y; a=a1
                out.append(.5*(v*v+w*w*x*x)/E0)
            return out
        print(th, wh, r, " ".join(f"{e:.4g}" for e in run2(wh)))
