/* Private: the body of the SIMD reprojection row kernel, included by
 * simd_reproject.c once per instruction set with these macros defined:
 *   FN          the function's name and target attribute
 *   W           lanes per vector
 *   VF, VI, VM  float vector, int vector, comparison mask types
 *   F(x)/I(x)   broadcast a float / an int
 *   ADD SUB MUL DIV SQRT (float), IADD ISUB IMUL (int, low 32 bits)
 *   GT(a, b) LT(a, b)  float a > b, a < b (ordered) as VM
 *   IGT(a, b) IEQ(a, b)  int a > b, a == b as VM
 *   SEL(m, t, f) / ISEL(m, t, f)  m ? t : f per lane
 *   ABS(x) NEG(x)  clear / flip the sign bit
 *   CVTT(x) (int)x by truncation; CVT(i) (float)i
 *   GATHER(base, idx)  32-bit loads at base + idx (bytes)
 *   SRLV(x, n) SLLV(x, n) logical shifts per lane; IAND IOR; LOADI(p) W ints
 *   LOADF(p) STOREF(p, v)  W floats
 *   ATAN2_Q1(r, ay, ax) declares VF r = pf_rp_atan2_q1(ay, ax) (below)
 *   PACK_PREP  declarations STORE_PIXELS needs
 *   STORE_PIXELS(out, px, C)  W pixels packed as r | g << 8 | b << 16 (| a << 24) to C bytes each
 * Every float operation is reproject_math.h's, in its order (see there);
 * selects replace its conditionals, which compute the same values. */

/* pf_rp_atan2_q1, operation for operation */
#define ATAN2_Q1(R, AY, AX)                                                                   \
    VF R;                                                                                     \
    {                                                                                         \
        const VM gt_ = GT(AX, AY);                                                            \
        const VF mx_ = SEL(gt_, AX, AY), mn_ = SEL(gt_, AY, AX);                              \
        const VM big_ = GT(mn_, MUL(F(0.414213562f), mx_));                                   \
        const VF num_ = SEL(big_, SUB(mn_, mx_), mn_);                                        \
        const VF den_ = SEL(big_, ADD(mn_, mx_), mx_);                                        \
        const VF t_ = DIV(num_, SEL(GT(den_, F(0.0f)), den_, F(1.0f)));                       \
        const VF z_ = MUL(t_, t_);                                                            \
        VF p_ = SUB(MUL(F(8.05374449538e-2f), z_), F(1.38776856032e-1f));                     \
        p_ = ADD(MUL(p_, z_), F(1.99777106478e-1f));                                          \
        p_ = SUB(MUL(p_, z_), F(3.33329491539e-1f));                                          \
        p_ = ADD(MUL(MUL(p_, z_), t_), t_);                                                   \
        const VF rr_ = SEL(big_, ADD(F(PF_RP_PI_4_F), p_), p_);                               \
        R = SEL(GT(AY, AX), SUB(F(PF_RP_PI_2_F), rr_), rr_);                                  \
    }

FN(const pf_rp_job *job, int vi, int j, int i0, int i1, uint8_t *out, const float *cfx,
   const float *cfy, float *sfx, float *sfy)
{
    const pf_rp_view *v = &job->views[vi];
    const pf_rp_row row = pf_rp_row_base(v, j);
    const int Wsrc = job->src_w, Hsrc = job->src_h, C = job->channels;
    const int stride = (int)job->src_stride;
    const uint8_t *src = job->src;
    /* pf_rp_cam_x's constant part, computed as there */
    const float cx0 = RP_SUB(0.5f, RP_MUL(0.5f, (float)v->width));
    const VF m00 = F(v->m00), m10 = F(v->m10), m20 = F(v->m20);
    const VF bx = F(row.bx), by = F(row.by), bz = F(row.bz), vcx0 = F(cx0);
    const VF zero = F(0.0f), half = F(0.5f);
    const VF srcw = F((float)Wsrc), srch = F((float)Hsrc);
    const VI iw = I(Wsrc), ih1 = I(Hsrc - 1), izero = I(0), ione = I(1);
    const VI iC = I(C), istride = I(stride), iwm1 = I(Wsrc - 1);
    int lane[W];
    for (int q = 0; q < W; q++) lane[q] = q;
    const VI iota = LOADI(lane);
    PACK_PREP;
    int i = i0;
    for (; i + W <= i1; i += W) {
        VF fx, fy;
        if (cfx) { /* cached map: the same floats as computed below */
            fx = LOADF(cfx + i);
            fy = LOADF(cfy + i);
        } else {
            /* pf_rp_ray */
            const VF xc = ADD(CVT(IADD(I(i), iota)), vcx0);
            const VF wx = ADD(MUL(m00, xc), bx);
            const VF wy = ADD(MUL(m10, xc), by);
            const VF wz = ADD(MUL(m20, xc), bz);
            /* pf_rp_fx: atan2(wx, wz) */
            VF lon;
            {
                const VF ay = ABS(wx), ax = ABS(wz);
                ATAN2_Q1(r, ay, ax);
                const VF rr = SEL(LT(wz, zero), SUB(F(PF_RP_PI_F), r), r);
                lon = SEL(LT(wx, zero), NEG(rr), rr);
            }
            fx = MUL(ADD(MUL(lon, F(PF_RP_INV_2PI_F)), half), srcw);
            /* pf_rp_fy with h = sqrt(wx^2 + wz^2) */
            const VF h = SQRT(ADD(MUL(wx, wx), MUL(wz, wz)));
            {
                const VF ay = ABS(wy), ax = h;
                ATAN2_Q1(r, ay, ax);
                const VF lat = SEL(LT(wy, zero), NEG(r), r);
                fy = MUL(SUB(half, MUL(lat, F(PF_RP_INV_PI_F))), srch);
            }
            if (sfx) {
                STOREF(sfx + i, fx);
                STOREF(sfy + i, fy);
            }
        }
        /* pf_rp_bilinear */
        const VF sx = SUB(fx, half), sy = SUB(fy, half);
        VI x0 = CVTT(sx), y0 = CVTT(sy);
        x0 = ISEL(GT(CVT(x0), sx), ISUB(x0, ione), x0);
        y0 = ISEL(GT(CVT(y0), sy), ISUB(y0, ione), y0);
        const VF tax = SUB(sx, CVT(x0)), tay = SUB(sy, CVT(y0));
        x0 = ISEL(IGT(izero, x0), IADD(x0, iw), x0);
        x0 = ISEL(IGT(iw, x0), x0, ISUB(x0, iw));
        const VI x1 = ISEL(IGT(iw, IADD(x0, ione)), IADD(x0, ione), izero);
        const VI y0c = ISEL(IGT(izero, y0), izero, ISEL(IGT(y0, ih1), ih1, y0));
        const VI y1r = IADD(y0, ione);
        const VI y1c = ISEL(IGT(izero, y1r), izero, ISEL(IGT(y1r, ih1), ih1, y1r));
        /* byte offsets; 3 channels: the last column reads from one byte
         * earlier (a 4-byte read there could pass the image's end) and
         * shifts the extra byte out */
        const VI r0 = IMUL(y0c, istride), r1 = IMUL(y1c, istride);
        const VI adj0 = C == 3 ? ISEL(IEQ(x0, iwm1), ione, izero) : izero;
        const VI adj1 = C == 3 ? ISEL(IEQ(x1, iwm1), ione, izero) : izero;
        const VI o0 = ISUB(IMUL(x0, iC), adj0), o1 = ISUB(IMUL(x1, iC), adj1);
        const VI s0 = IMUL(adj0, I(8)), s1 = IMUL(adj1, I(8));
        const VI pa = SRLV(GATHER(src, IADD(r0, o0)), s0);
        const VI pb = SRLV(GATHER(src, IADD(r0, o1)), s1);
        const VI pc = SRLV(GATHER(src, IADD(r1, o0)), s0);
        const VI pd = SRLV(GATHER(src, IADD(r1, o1)), s1);
        VI px = izero;
        const VI ff = I(0xff);
        for (int c = 0; c < C; c++) {
            const VI sh = I(8 * c);
            const VF a = CVT(IAND(SRLV(pa, sh), ff)), b = CVT(IAND(SRLV(pb, sh), ff));
            const VF cc = CVT(IAND(SRLV(pc, sh), ff)), d = CVT(IAND(SRLV(pd, sh), ff));
            /* pf_rp_blend_f */
            const VF top = ADD(a, MUL(tax, SUB(b, a)));
            const VF bot = ADD(cc, MUL(tax, SUB(d, cc)));
            const VF val = ADD(top, MUL(tay, SUB(bot, top)));
            px = IOR(px, SLLV(CVTT(ADD(val, half)), sh));
        }
        STORE_PIXELS(out + (size_t)i * (size_t)C, px, C);
    }
    return i;
}

#undef ATAN2_Q1
