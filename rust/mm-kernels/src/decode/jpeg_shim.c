/*
 * JPEG decode through libjpeg-turbo's libjpeg API, set up the way Pillow's JpegDecode.c sets it
 * up (islow IDCT and fancy upsampling, i.e. the library defaults; warnings ignored), so the
 * pixels are bit-identical with Pillow's.
 *
 * Why not the TurboJPEG (tj3) API: Pillow feeds libjpeg through a suspending source and raises
 * "image file is truncated" when the decoder still wants input after the last byte, unless every
 * scanline has already been produced (a missing EOI is tolerated then). TurboJPEG's memory source
 * turns running out of data into a warning whose message the next warning overwrites, so that
 * rule cannot be reproduced through it. A source manager of our own can.
 */

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "jpeglib.h"

#define MM_OK 0
#define MM_ERROR 1
#define MM_TRUNCATED 2
#define MM_MISMATCH 3
#define MM_STOPPED 4

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    int truncated;
} mm_error_mgr;

typedef struct {
    struct jpeg_source_mgr pub;
    mm_error_mgr *err;
    /* Set once every scanline is out: from then on running out of input is not an error. */
    int finishing;
} mm_source_mgr;

static const JOCTET mm_fake_eoi[2] = {0xFF, JPEG_EOI};

static void mm_error_exit(j_common_ptr cinfo) {
    mm_error_mgr *err = (mm_error_mgr *)cinfo->err;
    longjmp(err->jump, 1);
}

/* Warnings (corrupt-data notices) are ignored, as Pillow ignores them. */
static void mm_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void mm_noop(j_decompress_ptr cinfo) { (void)cinfo; }

static void mm_out_of_input(j_decompress_ptr cinfo) {
    mm_source_mgr *src = (mm_source_mgr *)cinfo->src;
    if (!src->finishing) {
        src->err->truncated = 1;
        longjmp(src->err->jump, 1);
    }
    src->pub.next_input_byte = mm_fake_eoi;
    src->pub.bytes_in_buffer = 2;
}

static boolean mm_fill_input_buffer(j_decompress_ptr cinfo) {
    mm_out_of_input(cinfo);
    return TRUE;
}

static void mm_skip_input_data(j_decompress_ptr cinfo, long num_bytes) {
    mm_source_mgr *src = (mm_source_mgr *)cinfo->src;
    if (num_bytes <= 0) {
        return;
    }
    if ((size_t)num_bytes > src->pub.bytes_in_buffer) {
        src->pub.next_input_byte += src->pub.bytes_in_buffer;
        src->pub.bytes_in_buffer = 0;
        mm_out_of_input(cinfo);
        return;
    }
    src->pub.next_input_byte += (size_t)num_bytes;
    src->pub.bytes_in_buffer -= (size_t)num_bytes;
}

/* Told how many rows of `out` are complete after each batch of scanlines (never from inside a
 * libjpeg call, so no longjmp ever crosses the callee's frames). A non-zero answer stops the
 * decode (MM_STOPPED): the caller was cancelled. */
typedef int (*mm_rows_done)(void *ctx, unsigned int rows);

static int mm_decode_impl(const unsigned char *data, size_t len, unsigned char *out,
                          size_t out_len, unsigned int width, unsigned int height, int components,
                          char *msg, size_t msg_len, mm_rows_done done, void *ctx);

/*
 * Decode `data` into `out` (`height` rows of `width * components` bytes). `components` is 3
 * (RGB: for 1- and 3-component JPEGs) or 4 (CMYK as libjpeg outputs it, YCCK converted).
 * `width`/`height` are the dimensions the caller validated its limits against; any other
 * outcome is MM_MISMATCH. On MM_ERROR, libjpeg's message is copied into `msg`.
 */
int mm_jpeg_decode(const unsigned char *data, size_t len, unsigned char *out, size_t out_len,
                   unsigned int width, unsigned int height, int components, char *msg,
                   size_t msg_len) {
    return mm_decode_impl(data, len, out, out_len, width, height, components, msg, msg_len, NULL,
                          NULL);
}

/* The same decode, calling `done(ctx, rows)` each time more rows of `out` are final; it stops
 * with MM_STOPPED when `done` answers non-zero. */
int mm_jpeg_decode_rows(const unsigned char *data, size_t len, unsigned char *out,
                        size_t out_len, unsigned int width, unsigned int height, int components,
                        char *msg, size_t msg_len, mm_rows_done done, void *ctx) {
    return mm_decode_impl(data, len, out, out_len, width, height, components, msg, msg_len, done,
                          ctx);
}

static int mm_decode_impl(const unsigned char *data, size_t len, unsigned char *out,
                          size_t out_len, unsigned int width, unsigned int height, int components,
                          char *msg, size_t msg_len, mm_rows_done done, void *ctx) {
    struct jpeg_decompress_struct cinfo;
    mm_error_mgr jerr;
    mm_source_mgr src;
    size_t stride = (size_t)width * (size_t)components;
    JSAMPROW rows[16];

    if (msg_len > 0) {
        msg[0] = '\0';
    }
    if (components != 3 && components != 4) {
        return MM_MISMATCH;
    }
    if (height != 0 && stride > out_len / height) {
        return MM_MISMATCH;
    }

    memset(&cinfo, 0, sizeof(cinfo));
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = mm_error_exit;
    jerr.pub.output_message = mm_output_message;
    jerr.truncated = 0;

    if (setjmp(jerr.jump)) {
        int rc = MM_TRUNCATED;
        if (!jerr.truncated) {
            char buffer[JMSG_LENGTH_MAX];
            buffer[0] = '\0';
            (*cinfo.err->format_message)((j_common_ptr)&cinfo, buffer);
            if (msg_len > 0) {
                strncpy(msg, buffer, msg_len - 1);
                msg[msg_len - 1] = '\0';
            }
            rc = MM_ERROR;
        }
        jpeg_destroy_decompress(&cinfo);
        return rc;
    }

    jpeg_create_decompress(&cinfo);
    memset(&src, 0, sizeof(src));
    src.pub.init_source = mm_noop;
    src.pub.fill_input_buffer = mm_fill_input_buffer;
    src.pub.skip_input_data = mm_skip_input_data;
    src.pub.resync_to_restart = jpeg_resync_to_restart;
    src.pub.term_source = mm_noop;
    src.pub.next_input_byte = data;
    src.pub.bytes_in_buffer = len;
    src.err = &jerr;
    src.finishing = 0;
    cinfo.src = &src.pub;

    /* Pillow reads past abbreviated table-only datastreams the same way. */
    while (jpeg_read_header(&cinfo, FALSE) == JPEG_HEADER_TABLES_ONLY) {
    }
    if (cinfo.image_width != width || cinfo.image_height != height) {
        jpeg_destroy_decompress(&cinfo);
        return MM_MISMATCH;
    }
    if (components == 4 ? cinfo.num_components != 4
                        : (cinfo.num_components != 1 && cinfo.num_components != 3)) {
        jpeg_destroy_decompress(&cinfo);
        return MM_MISMATCH;
    }
    cinfo.out_color_space = components == 4 ? JCS_CMYK : JCS_RGB;

    jpeg_start_decompress(&cinfo);
    if (cinfo.output_width != width || cinfo.output_height != height ||
        cinfo.output_components != components) {
        jpeg_destroy_decompress(&cinfo);
        return MM_MISMATCH;
    }

    while (cinfo.output_scanline < cinfo.output_height) {
        JDIMENSION first = cinfo.output_scanline;
        JDIMENSION n = cinfo.output_height - first;
        JDIMENSION i;
        if (n > 16) {
            n = 16;
        }
        for (i = 0; i < n; i++) {
            rows[i] = out + (size_t)(first + i) * stride;
        }
        if (jpeg_read_scanlines(&cinfo, rows, n) == 0) {
            jpeg_destroy_decompress(&cinfo);
            return MM_MISMATCH;
        }
        if (done != NULL && done(ctx, cinfo.output_scanline) != 0) {
            jpeg_destroy_decompress(&cinfo);
            return MM_STOPPED;
        }
    }

    src.finishing = 1;
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return MM_OK;
}
