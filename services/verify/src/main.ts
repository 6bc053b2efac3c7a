import { runService } from '@mandate/shared/service';
import { service } from './service';

/** The only file that connects and listens. */
runService(service);
